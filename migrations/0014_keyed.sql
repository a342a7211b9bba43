-- Keyed memory. Nothing kept after a forget may give the words back, and
-- the audit chain is keyed with the installation key and checked outside the
-- database (packages/memory/src/audit.ts).
--
-- Tombstones made from now on hold an HMAC-SHA256 of the normalised text and
-- a MinHash of HMAC'd words, both keyed with the installation key, which the
-- database never sees: without it a dictionary of guesses finds nothing.
-- Those made before keep their unkeyed hash and MinHash (hash_kind
-- 'sha256'): their text is gone, so they cannot be re-keyed, and dropping
-- them would let forgotten texts back in. They are still matched the old way
-- until lifted.

-- ---------------------------------------------------------------------------
-- The key this database is keyed with: its fingerprint (an HMAC of a
-- constant under the key, which tells keys apart and reveals nothing), so
-- that a process holding another key stops instead of letting tombstones
-- fail to match.
-- ---------------------------------------------------------------------------
create table installation_key (
  singleton boolean primary key default true check (singleton),
  fingerprint text not null check (fingerprint ~ '^[0-9a-f]{16}$'),
  created_at timestamptz not null default now()
);
grant select, insert on installation_key to roster_ops;

-- ---------------------------------------------------------------------------
-- Tombstones: how each one was made.
-- ---------------------------------------------------------------------------
alter table tombstones add column hash_kind text not null default 'sha256' check (hash_kind in ('sha256', 'hmac-sha256'));
alter table tombstones alter column hash_kind set default 'hmac-sha256';

-- A forgotten fact keeps its row (history shows that something existed) but
-- no hash of its words.
update facts set content_hash = '' where trust = 'forgotten' and content_hash <> '';

-- ---------------------------------------------------------------------------
-- The audit chain. Events so far were hashed in SQL with plain SHA-256
-- (hash_kind 'sha256'); from now on Roster appends events whose hash it
-- computed with the installation key ('hmac-sha256'), linked to the last
-- unkeyed one. The first process with the key seals each chain from before
-- with a keyed event (audit-keyed); after that no chain may end unkeyed.
-- ---------------------------------------------------------------------------
-- Events of remember, correct and update held the unkeyed SHA-256 of the
-- fact's words (content_sha256), which outlived a forget. They lose it, and
-- the unkeyed chains are recomputed over what remains, as they were made (an
-- unkeyed chain never resisted its owner: the keyed events that follow
-- protect it from here on). A chain that was already broken is recomputed
-- only up to its first broken link, so the break still shows where it was.
-- Each chain changed gets one more unkeyed event that says so.
alter table memory_events disable trigger memory_events_append_only;
do $$
declare
  v_agent uuid;
  v_broken bigint;
  v_row memory_events;
  v_prev text;
  v_changed bigint;
begin
  for v_agent in
    select distinct e.agent_id from memory_events e where e.detail ? 'content_sha256' order by 1
  loop
    select broken_seq into v_broken from roster_verify_events(v_agent);
    select count(*) into v_changed from memory_events e where e.agent_id = v_agent and e.detail ? 'content_sha256';
    update memory_events set detail = detail - 'content_sha256' where agent_id = v_agent and detail ? 'content_sha256';
    v_prev := null;
    for v_row in
      select * from memory_events e where e.agent_id = v_agent and (v_broken is null or e.seq < v_broken) order by e.seq
    loop
      update memory_events set
        prev_hash = v_prev,
        hash = roster_event_hash(v_prev, roster_event_canonical(v_row.agent_id, v_row.seq, v_row.person_id,
          v_row.actor_kind, v_row.actor_id, v_row.action, v_row.target_kind, v_row.target_id, v_row.detail, v_row.occurred_at))
      where id = v_row.id
      returning hash into v_prev;
    end loop;
    perform roster_append_event(v_agent, null, 'system', 'migration 0012_keyed', 'audit-redact', 'agent', v_agent::text,
      jsonb_build_object('removed', 'content_sha256', 'events', v_changed, 'recomputed_before', v_broken));
  end loop;
end
$$;
alter table memory_events enable trigger memory_events_append_only;

-- Every event so far, the upgrade's own included, was hashed the unkeyed way.
alter table memory_events add column hash_kind text not null default 'sha256' check (hash_kind in ('sha256', 'hmac-sha256'));
alter table memory_events alter column hash_kind drop default;

-- The hashes are computed and checked by Roster now, not by functions the
-- database holds (whoever owns the schema could redefine those).
drop function roster_append_events(jsonb);
drop function roster_append_event(uuid, uuid, text, text, text, text, text, jsonb);
drop function roster_verify_events(uuid);
drop function roster_event_hash(text, text);
drop function roster_event_canonical(uuid, bigint, uuid, text, text, text, text, text, jsonb, timestamptz);

-- The lock of one agent's chain, the same for every appender.
create function roster_event_chain_lock(p_agent_id uuid) returns bigint
language sql immutable
as $$ select hashtextextended('roster.memory_events:' || p_agent_id::text, 0) $$;

-- Lock the chains of these agents for the rest of the transaction (in one
-- order, so two appenders never wait on each other) and say where each ends,
-- with the time the next events carry (UTC, microseconds). Runs as the owner
-- so that it sees the whole chain whatever the caller may see; a scoped
-- caller may only ask for its own agent. It computes no hash.
create function roster_event_heads(p_agent_ids uuid[])
returns table (agent_id uuid, seq bigint, hash text, at text)
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
  v_agent uuid;
  v_at text := to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');
begin
  if current_setting('role') = 'roster_app' and exists (select 1 from unnest(p_agent_ids) a where a is distinct from roster_scope_agent()) then
    raise exception 'an event can only be appended to the scope''s agent' using errcode = '42501';
  end if;
  for v_agent in select distinct a from unnest(p_agent_ids) a where a is not null order by 1 loop
    perform pg_advisory_xact_lock(roster_event_chain_lock(v_agent));
    agent_id := v_agent;
    seq := 0;
    hash := null;
    at := v_at;
    select e.seq, e.hash into seq, hash from memory_events e where e.agent_id = v_agent order by e.seq desc limit 1;
    seq := coalesce(seq, 0);
    return next;
  end loop;
end
$$;
revoke all on function roster_event_heads(uuid[]) from public;
grant execute on function roster_event_heads(uuid[]) to roster_app, roster_ops;

-- Store events whose hashes Roster computed. Each must continue its chain:
-- the next number after the chain's last event (or the one before it in the
-- batch), linked to that event's hash. A scoped caller may only append to its
-- own agent, about its own person. It computes no hash.
create function roster_insert_events(p_events jsonb)
returns integer
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
  v_rows memory_events[];
  v_agent uuid;
  v_bad record;
  v_count integer;
begin
  if jsonb_typeof(p_events) is distinct from 'array' then
    raise exception 'roster_insert_events takes an array of events' using errcode = '22023';
  end if;
  -- Read once; the keys are the column names (hash_kind is set below, never taken from the caller).
  v_rows := array(select e from jsonb_populate_recordset(null::memory_events, p_events) e);
  if current_setting('role') = 'roster_app' and exists (
    select 1 from unnest(v_rows) e
    where e.agent_id is distinct from roster_scope_agent() or (e.person_id is not null and e.person_id is distinct from roster_scope_person())
  ) then
    raise exception 'an event can only be appended to the scope''s agent, about the scope''s person' using errcode = '42501';
  end if;

  -- Held already when the caller read the heads; taken here too, so no batch slips in between.
  for v_agent in select distinct e.agent_id from unnest(v_rows) e order by 1 loop
    perform pg_advisory_xact_lock(roster_event_chain_lock(v_agent));
  end loop;

  with pending as (
    select e.agent_id, e.seq, e.prev_hash, e.hash,
           lag(e.seq) over w as batch_prev_seq,
           lag(e.hash) over w as batch_prev_hash,
           row_number() over w as position
    from unnest(v_rows) e
    window w as (partition by e.agent_id order by e.seq)
  )
  select p.agent_id, p.seq into v_bad
  from pending p
  left join lateral (
    select m.seq, m.hash from memory_events m where m.agent_id = p.agent_id order by m.seq desc limit 1
  ) h on p.position = 1
  where p.hash is null or p.hash !~ '^[0-9a-f]{64}$'
     or (p.position = 1 and (p.seq is distinct from coalesce(h.seq, 0) + 1 or p.prev_hash is distinct from h.hash))
     or (p.position > 1 and (p.seq is distinct from p.batch_prev_seq + 1 or p.prev_hash is distinct from p.batch_prev_hash))
  limit 1;
  if found then
    raise exception 'memory event % of agent % does not continue its chain: read the head again', v_bad.seq, v_bad.agent_id
      using errcode = '40001';
  end if;

  insert into memory_events (id, agent_id, seq, person_id, actor_kind, actor_id, action, target_kind, target_id, detail, occurred_at, prev_hash, hash, hash_kind)
  select e.id, e.agent_id, e.seq, e.person_id, e.actor_kind, e.actor_id, e.action, e.target_kind, e.target_id,
         coalesce(e.detail, '{}'::jsonb), e.occurred_at, e.prev_hash, e.hash, 'hmac-sha256'
  from unnest(v_rows) e
  order by e.agent_id, e.seq;
  get diagnostics v_count = row_count;
  return v_count;
end
$$;
revoke all on function roster_insert_events(jsonb) from public;
grant execute on function roster_insert_events(jsonb) to roster_app, roster_ops;
