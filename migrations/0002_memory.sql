-- Memory that tells the truth: full-text search on facts, embeddings per
-- model, tombstones, the hash-chained audit log, conversations and messages
-- (so forgetting reaches the words a fact came from), and the outbox.

-- Facts are findable by full-text search the moment they are written.
alter table facts
  add column search_vector tsvector
    generated always as (to_tsvector('english', content)) stored;
-- No pending list: the embedded database has no autovacuum to flush one, and
-- an unflushed list makes every search read it whole.
create index facts_search_idx on facts using gin (search_vector) with (fastupdate = off);
create index facts_hash_idx on facts (agent_id, content_hash);
create index facts_fade_idx on facts (trust, recorded_at) where trust in ('active', 'candidate');

-- Delete is never granted on facts; the owner's purge goes through adminScope.

-- Vectors, one row per fact and model. The column has no fixed dimension, so
-- a new model needs no migration: each model gets its own partial HNSW index
-- on an expression cast to its dimension, made when the model is first used.
create table fact_embeddings (
  fact_id uuid not null references facts (id) on delete cascade,
  model text not null,
  agent_id uuid not null,
  person_id uuid,
  audience text not null check (audience in ('private', 'agent')),
  embedding vector not null,
  -- Mirrors whether the fact is readable now (candidate, active or verified,
  -- and still valid), so the vector arm searches one table and its HNSW
  -- index can serve the scope filter with iterative scans.
  searchable boolean not null default true,
  created_at timestamptz not null default now(),
  primary key (fact_id, model)
);
create index fact_embeddings_scope_idx on fact_embeddings (model, agent_id, person_id);

-- Keep `searchable` in step with the fact. It runs as the owner: the change
-- to the fact already passed that row's policies.
create function roster_sync_embedding_searchable() returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
begin
  if new.trust is distinct from old.trust or new.valid_to is distinct from old.valid_to then
    update fact_embeddings
      set searchable = (new.trust in ('candidate', 'active', 'verified') and new.valid_to is null)
      where fact_id = new.id;
  end if;
  return new;
end
$$;
create trigger facts_sync_embedding_searchable after update of trust, valid_to on facts
  for each row execute function roster_sync_embedding_searchable();

create table embedding_models (
  model text primary key,
  dimensions integer not null check (dimensions between 1 and 16000),
  index_name text not null,
  created_at timestamptz not null default now()
);
grant select on embedding_models to roster_app;

alter table fact_embeddings enable row level security;
alter table fact_embeddings force row level security;
create policy fact_embeddings_select on fact_embeddings for select to roster_app
  using (
    agent_id = roster_scope_agent()
    and (audience = 'agent' or (person_id = roster_scope_person() and roster_scope_audience() = 'private'))
  );
create policy fact_embeddings_insert on fact_embeddings for insert to roster_app
  with check (
    agent_id = roster_scope_agent()
    and (person_id is null or person_id = roster_scope_person())
    and (audience = 'agent' or person_id = roster_scope_person())
  );
create policy fact_embeddings_delete on fact_embeddings for delete to roster_app
  using (
    agent_id = roster_scope_agent()
    and (person_id is null or person_id = roster_scope_person())
  );
create policy fact_embeddings_update on fact_embeddings for update to roster_app
  using (agent_id = roster_scope_agent() and (person_id is null or person_id = roster_scope_person()))
  with check (agent_id = roster_scope_agent() and (person_id is null or person_id = roster_scope_person()));
grant select, insert, update, delete on fact_embeddings to roster_app;

-- What a forgotten fact leaves: a hash of its normalised text and a MinHash
-- signature of its words, never the text.
create table tombstones (
  id uuid primary key default gen_random_uuid(),
  agent_id uuid not null references agents (id),
  person_id uuid references people (id),
  fact_id uuid references facts (id),
  content_hash text not null,
  minhash bigint[] not null,
  source_message_ids uuid[] not null default '{}',
  created_at timestamptz not null default now(),
  lifted_at timestamptz,
  lifted_by_message_id uuid
);
create index tombstones_scope_idx on tombstones (agent_id, person_id) where lifted_at is null;

alter table tombstones enable row level security;
alter table tombstones force row level security;
create policy tombstones_select on tombstones for select to roster_app
  using (agent_id = roster_scope_agent() and (person_id is null or person_id = roster_scope_person()));
create policy tombstones_insert on tombstones for insert to roster_app
  with check (agent_id = roster_scope_agent() and (person_id is null or person_id = roster_scope_person()));
create policy tombstones_update on tombstones for update to roster_app
  using (agent_id = roster_scope_agent() and (person_id is null or person_id = roster_scope_person()))
  with check (agent_id = roster_scope_agent() and (person_id is null or person_id = roster_scope_person()));
grant select, insert, update on tombstones to roster_app;

-- Conversations and the canonical transcript. A redelivered platform message
-- (same external id in the same conversation) is stored once.
create table conversations (
  id uuid primary key default gen_random_uuid(),
  channel text not null check (channel in ('web', 'cli', 'telegram', 'discord', 'slack', 'whatsapp', 'internal')),
  external_id text not null,
  kind text not null default 'dm' check (kind in ('dm', 'group')),
  mode text not null default 'solo' check (mode in ('solo', 'team')),
  created_at timestamptz not null default now(),
  last_message_at timestamptz,
  unique (channel, external_id)
);

create table messages (
  id uuid primary key default gen_random_uuid(),
  conversation_id uuid not null references conversations (id),
  external_id text,
  role text not null check (role in ('person', 'agent', 'system', 'tool')),
  person_id uuid references people (id),
  agent_id uuid references agents (id),
  content text not null check (length(content) <= 32000),
  -- Secrets were found and replaced before storing.
  redacted boolean not null default false,
  -- The content came from outside the conversation (a web page, a file, tool output).
  untrusted boolean not null default false,
  -- Set when a fact drawn from this message is forgotten: its content is erased,
  -- and no replay, search or derivation reads it again.
  forgotten_at timestamptz,
  created_at timestamptz not null default now(),
  unique (conversation_id, external_id)
);
create index messages_conversation_idx on messages (conversation_id, created_at);

-- Forgetting reaches the transcript: erase the messages a forgotten fact came
-- from, and any message of the same conversations by that person or agent
-- that repeats the forgotten words (the agent's "Noted: …"). Only messages of
-- the scope's person and agent can be touched.
create function roster_forget_messages(p_message_ids uuid[], p_normalized text)
returns integer
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
  v_agent uuid := roster_scope_agent();
  v_person uuid := roster_scope_person();
  v_count integer;
begin
  if v_agent is null then
    raise exception 'roster_forget_messages needs a scope' using errcode = '42501';
  end if;
  with targets as (
    select m.id from messages m
    where (m.id = any(p_message_ids) and (m.person_id = v_person or m.agent_id = v_agent))
       or (
         m.conversation_id in (select conversation_id from messages where id = any(p_message_ids))
         and (m.person_id = v_person or m.agent_id = v_agent)
         and length(p_normalized) > 0
         and position(p_normalized in trim(regexp_replace(lower(m.content), '[^[:alnum:]]+', ' ', 'g'))) > 0
       )
  )
  update messages set content = '', forgotten_at = coalesce(forgotten_at, now())
  where id in (select id from targets);
  get diagnostics v_count = row_count;
  return v_count;
end
$$;
revoke all on function roster_forget_messages(uuid[], text) from public;
grant execute on function roster_forget_messages(uuid[], text) to roster_app;

-- The audit log: one row per mutation of memory, hash-chained per agent.
create table memory_events (
  id uuid primary key default gen_random_uuid(),
  agent_id uuid not null references agents (id),
  seq bigint not null,
  person_id uuid,
  actor_kind text not null check (actor_kind in ('person', 'agent', 'job', 'owner', 'system')),
  actor_id text,
  action text not null,
  target_kind text not null,
  target_id text,
  -- Redacted, and never the content of a fact: ids, hashes, states and counts.
  detail jsonb not null default '{}',
  occurred_at timestamptz not null default now(),
  prev_hash text,
  hash text not null,
  unique (agent_id, seq)
);

create function roster_forbid_event_change() returns trigger
language plpgsql
as $$
begin
  raise exception 'memory_events is append-only: % is not allowed', tg_op using errcode = '42501';
end
$$;
create trigger memory_events_append_only before update or delete on memory_events
  for each row execute function roster_forbid_event_change();
create trigger memory_events_no_truncate before truncate on memory_events
  for each statement execute function roster_forbid_event_change();

-- The canonical text a row's hash covers: its fields as jsonb (whose text
-- form has a fixed key order and spacing), with the time in UTC microseconds.
create function roster_event_canonical(
  p_agent_id uuid, p_seq bigint, p_person_id uuid, p_actor_kind text, p_actor_id text,
  p_action text, p_target_kind text, p_target_id text, p_detail jsonb, p_occurred_at timestamptz
) returns text
language sql immutable
as $$
  select jsonb_build_object(
    'agent_id', p_agent_id, 'seq', p_seq, 'person_id', p_person_id,
    'actor_kind', p_actor_kind, 'actor_id', p_actor_id, 'action', p_action,
    'target_kind', p_target_kind, 'target_id', p_target_id, 'detail', p_detail,
    'occurred_at', to_char(p_occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
  )::text
$$;

create function roster_event_hash(p_prev text, p_canonical text) returns text
language sql immutable
as $$ select encode(sha256(convert_to(coalesce(p_prev, '') || p_canonical, 'UTF8')), 'hex') $$;

-- Append one event to an agent's chain. Runs as the owner so that it can read
-- the chain's last hash whatever the caller may see; a scoped caller may only
-- append to its own agent, about its own person.
create function roster_append_event(
  p_agent_id uuid, p_person_id uuid, p_actor_kind text, p_actor_id text,
  p_action text, p_target_kind text, p_target_id text, p_detail jsonb
) returns memory_events
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
  v_prev memory_events;
  v_row memory_events;
  v_at timestamptz := clock_timestamp();
begin
  if current_setting('role') = 'roster_app' then
    if p_agent_id is distinct from roster_scope_agent() then
      raise exception 'an event can only be appended to the scope''s agent' using errcode = '42501';
    end if;
    if p_person_id is not null and p_person_id is distinct from roster_scope_person() then
      raise exception 'an event can only name the scope''s person' using errcode = '42501';
    end if;
  end if;
  perform pg_advisory_xact_lock(hashtextextended('roster.memory_events:' || p_agent_id::text, 0));
  select * into v_prev from memory_events where agent_id = p_agent_id order by seq desc limit 1;
  v_row.id := gen_random_uuid();
  v_row.agent_id := p_agent_id;
  v_row.seq := coalesce(v_prev.seq, 0) + 1;
  v_row.person_id := p_person_id;
  v_row.actor_kind := p_actor_kind;
  v_row.actor_id := p_actor_id;
  v_row.action := p_action;
  v_row.target_kind := p_target_kind;
  v_row.target_id := p_target_id;
  v_row.detail := coalesce(p_detail, '{}'::jsonb);
  v_row.occurred_at := v_at;
  v_row.prev_hash := v_prev.hash;
  v_row.hash := roster_event_hash(
    v_prev.hash,
    roster_event_canonical(v_row.agent_id, v_row.seq, v_row.person_id, v_row.actor_kind, v_row.actor_id,
      v_row.action, v_row.target_kind, v_row.target_id, v_row.detail, v_row.occurred_at)
  );
  insert into memory_events values (v_row.*);
  return v_row;
end
$$;
revoke all on function roster_append_event(uuid, uuid, text, text, text, text, text, jsonb) from public;
grant execute on function roster_append_event(uuid, uuid, text, text, text, text, text, jsonb) to roster_app;

-- Walk each chain and report the first row whose link or hash does not hold.
create function roster_verify_events(p_agent_id uuid default null)
returns table (agent_id uuid, events bigint, broken_seq bigint, broken_id uuid, problem text)
language plpgsql
as $$
declare
  v_agent uuid;
  v_row memory_events;
  v_prev_hash text;
  v_expected_seq bigint;
  v_count bigint;
begin
  for v_agent in
    select distinct e.agent_id from memory_events e where p_agent_id is null or e.agent_id = p_agent_id order by 1
  loop
    v_prev_hash := null;
    v_expected_seq := 1;
    v_count := 0;
    agent_id := v_agent;
    broken_seq := null;
    broken_id := null;
    problem := null;
    for v_row in select * from memory_events e where e.agent_id = v_agent order by e.seq loop
      v_count := v_count + 1;
      if v_row.seq <> v_expected_seq then
        broken_seq := v_row.seq; broken_id := v_row.id;
        problem := format('expected event %s, found %s: an event is missing', v_expected_seq, v_row.seq);
        exit;
      end if;
      if v_row.prev_hash is distinct from v_prev_hash then
        broken_seq := v_row.seq; broken_id := v_row.id;
        problem := 'its link to the previous event does not match';
        exit;
      end if;
      if v_row.hash <> roster_event_hash(v_prev_hash, roster_event_canonical(v_row.agent_id, v_row.seq, v_row.person_id,
           v_row.actor_kind, v_row.actor_id, v_row.action, v_row.target_kind, v_row.target_id, v_row.detail, v_row.occurred_at)) then
        broken_seq := v_row.seq; broken_id := v_row.id;
        problem := 'its content does not match its hash';
        exit;
      end if;
      v_prev_hash := v_row.hash;
      v_expected_seq := v_expected_seq + 1;
    end loop;
    events := v_count;
    return next;
  end loop;
end
$$;

alter table memory_events enable row level security;
alter table memory_events force row level security;
create policy memory_events_select on memory_events for select to roster_app
  using (agent_id = roster_scope_agent() and (person_id is null or person_id = roster_scope_person()));
grant select on memory_events to roster_app;

-- Jobs written in the same transaction as the change that needs them, and
-- relayed to the queues; nothing is lost while Redis is down. Payloads carry
-- ids, never memory content.
create table outbox (
  id uuid primary key default gen_random_uuid(),
  queue text not null,
  name text not null,
  payload jsonb not null default '{}',
  dedupe_key text not null unique,
  agent_id uuid references agents (id),
  created_at timestamptz not null default now(),
  relayed_at timestamptz,
  attempts integer not null default 0,
  last_error text
);
create index outbox_pending_idx on outbox (created_at) where relayed_at is null;

alter table outbox enable row level security;
alter table outbox force row level security;
create policy outbox_insert on outbox for insert to roster_app
  with check (agent_id = roster_scope_agent());
-- A producer that writes the same job twice (same dedupe key) is told so, not failed.
create policy outbox_select on outbox for select to roster_app
  using (agent_id = roster_scope_agent());
grant select, insert on outbox to roster_app;
