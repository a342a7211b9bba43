-- The learning loop: mirror cases and their runs, episodes, and the lesson
-- rules that keep promotion in people's hands.

-- A correction a person gave, kept as a test case for the agent it was said to.
create table mirror_cases (
  id uuid primary key default gen_random_uuid(),
  agent_id uuid not null references agents (id),
  person_id uuid references people (id),
  -- The correction in the person's words (redacted; erased if forgotten).
  text text not null check (length(text) <= 4000),
  text_hash text not null,
  source_event_id uuid references learning_events (id),
  source_message_id uuid references messages (id),
  status text not null default 'active' check (status in ('active', 'graduated')),
  streak integer not null default 0,
  runs integer not null default 0,
  last_run_at timestamptz,
  graduated_at timestamptz,
  -- A graduated case is checked again once a month.
  next_check_at timestamptz,
  created_at timestamptz not null default now(),
  unique (agent_id, text_hash)
);
create index mirror_cases_due_idx on mirror_cases (agent_id, status, last_run_at nulls first);

create table mirror_runs (
  id uuid primary key default gen_random_uuid(),
  case_id uuid not null references mirror_cases (id),
  agent_id uuid not null references agents (id),
  -- The lessons the probe carried: the agent's own, as they were that night.
  lessons_shown jsonb not null default '[]',
  answer text not null,
  verdict text not null check (verdict in ('pass', 'fail', 'error')),
  reason text not null default '',
  ran_at timestamptz not null default now()
);
create index mirror_runs_case_idx on mirror_runs (case_id, ran_at);

alter table mirror_cases enable row level security;
alter table mirror_cases force row level security;
create policy mirror_cases_select on mirror_cases for select to roster_app using (agent_id = roster_scope_agent());
grant select on mirror_cases to roster_app;
alter table mirror_runs enable row level security;
alter table mirror_runs force row level security;
create policy mirror_runs_select on mirror_runs for select to roster_app using (agent_id = roster_scope_agent());
grant select on mirror_runs to roster_app;

-- Short summaries of idle conversations, with the messages they came from.
create table episodes (
  id uuid primary key default gen_random_uuid(),
  conversation_id uuid not null references conversations (id),
  agent_id uuid not null references agents (id),
  person_id uuid references people (id),
  summary text not null check (length(summary) <= 4000),
  source_message_ids uuid[] not null default '{}',
  -- Set when a source message was forgotten or redacted: rebuilt without it.
  stale boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (conversation_id, agent_id)
);
alter table episodes enable row level security;
alter table episodes force row level security;
create policy episodes_select on episodes for select to roster_app
  using (agent_id = roster_scope_agent() and (person_id is null or (person_id = roster_scope_person() and roster_scope_audience() = 'private')));
grant select on episodes to roster_app;

-- How far each (conversation, agent) has been read by extraction and episodes.
create table conversation_marks (
  conversation_id uuid not null references conversations (id),
  agent_id uuid not null references agents (id),
  extracted_until timestamptz,
  summarized_until timestamptz,
  primary key (conversation_id, agent_id)
);

alter table learning_events add column reviewed_at timestamptz;

-- Retired lessons keep a signature of their text so that review never
-- proposes the same text again.
alter table lessons add column minhash bigint[] not null default '{}';

-- A lesson exists only through an approval a person decided.
create function roster_check_lesson_approval() returns trigger
language plpgsql
as $$
begin
  if not exists (
    select 1 from approvals a
    where a.id = new.approval_id and a.status = 'approved' and a.decided_by = new.approved_by and a.agent_id = new.agent_id
  ) then
    raise exception 'a lesson needs an approval decided by the person who approved it' using errcode = '42501';
  end if;
  return new;
end
$$;
create trigger lessons_need_approval before insert on lessons
  for each row execute function roster_check_lesson_approval();

-- Forgetting reaches episodes and mirror cases too: an episode built from an
-- erased message loses its summary at once (and is rebuilt by a job); a
-- mirror case drawn from it loses its text.
create or replace function roster_forget_messages(p_message_ids uuid[], p_normalized text)
returns integer
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
  v_agent uuid := roster_scope_agent();
  v_person uuid := roster_scope_person();
  v_erased uuid[];
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
  ), erased as (
    update messages set content = '', forgotten_at = coalesce(forgotten_at, now())
    where id in (select id from targets)
    returning id
  )
  select coalesce(array_agg(id), '{}') into v_erased from erased;

  update learning_events set text = ''
  where agent_id = v_agent and person_id is not distinct from v_person
    and (message_id = any(p_message_ids) or message_id = any(v_erased)
         or (length(p_normalized) > 0
             and position(p_normalized in trim(regexp_replace(lower(text), '[^[:alnum:]]+', ' ', 'g'))) > 0));

  update mirror_cases set text = ''
  where agent_id = v_agent
    and (source_message_id = any(v_erased) or source_message_id = any(p_message_ids)
         or (length(p_normalized) > 0
             and position(p_normalized in trim(regexp_replace(lower(text), '[^[:alnum:]]+', ' ', 'g'))) > 0));

  update episodes set summary = '', stale = true, updated_at = now()
  where source_message_ids && v_erased or source_message_ids && p_message_ids;

  return coalesce(array_length(v_erased, 1), 0);
end
$$;
