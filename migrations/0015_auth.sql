-- Who may use the HTTP API: one-time login links, the sessions they open
-- (a cookie), and personal API tokens (a bearer header). Each credential is
-- kept only as the SHA-256 of its 32 random bytes: a copy of these tables
-- opens nothing. None of them holds anything a person said.
--
-- Only the server's owner tools reach them, as roster_ops: the runtime role
-- roster_app (a turn, a job in a scope) has no grant on them at all.

create table login_links (
  token_hash text primary key check (token_hash ~ '^[0-9a-f]{64}$'),
  person_id uuid not null references people (id) on delete cascade,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  -- Set when the link opened a session: a link works once.
  used_at timestamptz
);
create index login_links_person_idx on login_links (person_id);

create table web_sessions (
  id uuid primary key default gen_random_uuid(),
  token_hash text not null unique check (token_hash ~ '^[0-9a-f]{64}$'),
  person_id uuid not null references people (id) on delete cascade,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  last_seen_at timestamptz not null default now()
);
create index web_sessions_person_idx on web_sessions (person_id);

create table api_tokens (
  id uuid primary key default gen_random_uuid(),
  token_hash text not null unique check (token_hash ~ '^[0-9a-f]{64}$'),
  person_id uuid not null references people (id) on delete cascade,
  -- A label the person chose so they can tell their tokens apart.
  name text not null check (char_length(name) between 1 and 80),
  created_at timestamptz not null default now(),
  -- Null: until the person revokes it.
  expires_at timestamptz,
  last_used_at timestamptz
);
create index api_tokens_person_idx on api_tokens (person_id);

do $$
declare
  v_table text;
begin
  foreach v_table in array array['login_links', 'web_sessions', 'api_tokens'] loop
    execute format('alter table %I enable row level security', v_table);
    execute format('alter table %I force row level security', v_table);
    execute format('create policy %I on %I for all to roster_ops using (true) with check (true)', v_table || '_ops', v_table);
  end loop;
end
$$;

-- Logging out, revoking a token and dropping expired rows delete them: a
-- credential that no longer opens anything is not kept.
grant select, insert, update, delete on login_links, web_sessions, api_tokens to roster_ops;
