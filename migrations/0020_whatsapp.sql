-- WhatsApp as a linked device. One row per WhatsApp account Roster serves
-- says where its link stands (what `roster doctor` and the web page show),
-- and its authentication state lives beside it: the device's credentials and
-- its Signal keys, each sealed with the installation key (AES-256-GCM, the
-- account and the key's id as authenticated context, so a value copied to
-- another row or another installation does not open). Nothing here is what a
-- person said: keys, a pairing code, the linked number and a state.
--
-- Only the gateway and the owner's tools reach these tables, as roster_ops;
-- roster_app (a turn, a job in a scope) has no grant on them.

create table whatsapp_sessions (
  account text primary key check (char_length(account) between 1 and 80),
  -- waiting_for_scan: a QR code is shown and waits for a phone to scan it;
  -- linked: the device is paired (the connection may still be coming up);
  -- reconnecting: the connection dropped and is being tried again;
  -- logged_out: the phone removed the device; it must be linked again.
  status text not null check (status in ('waiting_for_scan', 'linked', 'reconnecting', 'logged_out')),
  -- The linked number, kept after a logout so that the owner knows which one to link again.
  phone text check (phone ~ '^\+[0-9]{5,20}$'),
  -- The QR code's text while waiting for a scan, sealed: it carries the pairing secret.
  qr_sealed text,
  -- The device's credentials (baileys' AuthenticationCreds as BufferJSON), sealed; null until linked.
  creds_sealed text,
  linked_at timestamptz,
  updated_at timestamptz not null default now()
);

create table whatsapp_keys (
  account text not null check (char_length(account) between 1 and 80),
  -- The Signal store's kind of data: pre-key, session, sender-key, app-state-sync-key, lid-mapping…
  kind text not null check (kind ~ '^[a-z][a-z-]{0,40}$'),
  id text not null check (char_length(id) between 1 and 300),
  value_sealed text not null,
  updated_at timestamptz not null default now(),
  primary key (account, kind, id)
);

do $$
declare
  v_table text;
begin
  foreach v_table in array array['whatsapp_sessions', 'whatsapp_keys'] loop
    execute format('alter table %I enable row level security', v_table);
    execute format('alter table %I force row level security', v_table);
    execute format('create policy %I on %I for all to roster_ops using (true) with check (true)', v_table || '_ops', v_table);
  end loop;
end
$$;

-- A logout deletes the keys and the credentials: a dead session is not kept.
grant select, insert, update, delete on whatsapp_sessions, whatsapp_keys to roster_ops;
