-- The conversation core: channel bindings and their access policy, link
-- codes, conversation routing, learning events, lessons and approvals.

-- A bot account on a channel, bound to one agent or to the whole wallet.
create table channel_bindings (
  id uuid primary key default gen_random_uuid(),
  channel text not null check (channel in ('web', 'cli', 'telegram', 'discord', 'slack', 'whatsapp')),
  account text not null default 'default',
  -- null: the whole wallet (every agent, by /agent, @mention or team mode).
  agent_id uuid references agents (id),
  policy text not null default 'pairing' check (policy in ('pairing', 'allowlist', 'open')),
  -- External ids let in by an allowlist policy.
  allowlist text[] not null default '{}',
  created_at timestamptz not null default now(),
  unique (channel, account)
);

-- Short-lived, single-use codes that tie a new channel identity to a person.
create table link_codes (
  code text primary key check (code ~ '^[A-Z2-9]{8}$'),
  person_id uuid not null references people (id) on delete cascade,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  used_at timestamptz,
  used_by_identity uuid references identities (id)
);
create index link_codes_person_idx on link_codes (person_id) where used_at is null;

alter table conversations
  add column binding_id uuid references channel_bindings (id),
  -- The person of a direct conversation.
  add column person_id uuid references people (id),
  -- The agent a solo conversation talks to, after /agent or the binding.
  add column agent_id uuid references agents (id);

create index messages_person_idx on messages (person_id) where person_id is not null;

-- Learning signals, detected once in the core for every road, recorded under
-- the (agent, person) they were said to.
create table learning_events (
  id uuid primary key default gen_random_uuid(),
  agent_id uuid not null references agents (id),
  person_id uuid references people (id),
  conversation_id uuid references conversations (id),
  message_id uuid references messages (id),
  kind text not null check (kind in ('correction', 'remember', 'preference', 'negative-rating', 'positive-rating', 'feedback')),
  -- The words that carried the signal (redacted; erased when a fact drawn from them is forgotten).
  text text not null check (length(text) <= 4000),
  actor_kind text not null default 'person' check (actor_kind in ('person', 'agent')),
  channel text,
  created_at timestamptz not null default now(),
  harvested_at timestamptz
);
create index learning_events_scope_idx on learning_events (agent_id, person_id, created_at);

alter table learning_events enable row level security;
alter table learning_events force row level security;
create policy learning_events_select on learning_events for select to roster_app
  using (agent_id = roster_scope_agent() and (person_id is null or person_id = roster_scope_person()));
create policy learning_events_insert on learning_events for insert to roster_app
  with check (agent_id = roster_scope_agent() and (person_id is null or person_id = roster_scope_person()));
grant select, insert on learning_events to roster_app;

-- Rules about an agent's own behaviour that ride in every later prompt. Only
-- a person's approval promotes one; a retired text cannot come back.
create table lessons (
  id uuid primary key default gen_random_uuid(),
  agent_id uuid not null references agents (id),
  text text not null check (length(text) between 20 and 4000),
  text_hash text not null,
  status text not null default 'active' check (status in ('active', 'retired')),
  version integer not null default 1,
  evidence jsonb not null default '[]',
  approval_id uuid,
  approved_by uuid not null references people (id),
  approved_at timestamptz not null default now(),
  retired_at timestamptz,
  retired_reason text,
  created_at timestamptz not null default now()
);
create unique index lessons_active_text_key on lessons (agent_id, text_hash) where status = 'active';

alter table lessons enable row level security;
alter table lessons force row level security;
create policy lessons_select on lessons for select to roster_app using (agent_id = roster_scope_agent());
grant select on lessons to roster_app;

-- What waits for a person's decision, with the whole text they approve.
create table approvals (
  id uuid primary key default gen_random_uuid(),
  agent_id uuid not null references agents (id),
  kind text not null default 'lesson' check (kind in ('lesson')),
  text text not null check (length(text) between 1 and 4000),
  evidence jsonb not null default '[]',
  confidence real,
  status text not null default 'pending' check (status in ('pending', 'approved', 'rejected')),
  proposed_by_kind text not null check (proposed_by_kind in ('agent', 'job', 'person')),
  proposed_by text,
  decided_by uuid references people (id),
  decided_at timestamptz,
  created_at timestamptz not null default now()
);
create index approvals_pending_idx on approvals (agent_id) where status = 'pending';

alter table approvals enable row level security;
alter table approvals force row level security;
create policy approvals_select on approvals for select to roster_app using (agent_id = roster_scope_agent());
-- An agent may only propose: a row it inserts is pending and undecided.
create policy approvals_insert on approvals for insert to roster_app
  with check (agent_id = roster_scope_agent() and status = 'pending' and decided_by is null and decided_at is null);
grant select, insert on approvals to roster_app;

-- Forgetting now also reaches the learning signals drawn from the same
-- messages or repeating the forgotten words.
create or replace function roster_forget_messages(p_message_ids uuid[], p_normalized text)
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
  with agent_conversations as (
    select c.id from conversations c
    where c.agent_id = v_agent
       or exists (select 1 from messages x where x.conversation_id = c.id and x.agent_id = v_agent)
       or c.id in (select conversation_id from messages where id = any(p_message_ids))
  ), targets as (
    select m.id from messages m
    where (m.id = any(p_message_ids) and (m.person_id = v_person or m.agent_id = v_agent))
       or (
         m.conversation_id in (select id from agent_conversations)
         and (m.person_id = v_person or m.agent_id = v_agent)
         and length(p_normalized) > 0
         and position(p_normalized in trim(regexp_replace(lower(m.content), '[^[:alnum:]]+', ' ', 'g'))) > 0
       )
  )
  update messages set content = '', forgotten_at = coalesce(forgotten_at, now())
  where id in (select id from targets);
  get diagnostics v_count = row_count;

  update learning_events set text = ''
  where agent_id = v_agent and person_id is not distinct from v_person
    and (message_id = any(p_message_ids)
         or (length(p_normalized) > 0
             and position(p_normalized in trim(regexp_replace(lower(text), '[^[:alnum:]]+', ' ', 'g'))) > 0));
  return v_count;
end
$$;
