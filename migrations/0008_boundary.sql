-- The database boundary. Three roles, none a superuser, none with BYPASSRLS:
--
--   the owner      the role in DATABASE_URL (on the embedded database,
--                  roster_owner). Owns the schema and runs migrations. It is
--                  a member of the two below, and row-level security is
--                  forced on it like on anyone else.
--   roster_app     every scoped transaction (SET LOCAL ROLE): a turn, a
--                  memory tool. Sees the rows of its scope and nothing else.
--   roster_ops     the owner's tools, the router that stores a message
--                  before its sender is known, and the jobs that work across
--                  agents. Reads across scopes; owns nothing, creates
--                  nothing, never deletes the audit log.
--
-- Security-definer functions run as the owner; their policies come from its
-- membership in roster_ops.

do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'roster_ops') then
    begin
      create role roster_ops nologin;
    exception when duplicate_object or unique_violation then
      null;
    end;
  end if;
end
$$;

-- The owner must be able to switch to both roles, and must have roster_ops's
-- policies itself (its security-definer functions read across scopes). Since
-- Postgres 16 a role's creator holds it only with ADMIN, which neither lets
-- it SET ROLE nor inherits: grant the options explicitly.
do $$
declare
  v_owner text := current_user;
begin
  if exists (select 1 from pg_roles where rolname = v_owner and rolsuper) then
    return;
  end if;
  if current_setting('server_version_num')::int >= 160000 then
    execute format('grant roster_app to %I with inherit false, set true', v_owner);
    execute format('grant roster_ops to %I with inherit true, set true', v_owner);
  else
    if not pg_has_role(v_owner, 'roster_app', 'member') then
      execute format('grant roster_app to %I', v_owner);
    end if;
    if not pg_has_role(v_owner, 'roster_ops', 'member') then
      execute format('grant roster_ops to %I', v_owner);
    end if;
  end if;
exception when insufficient_privilege then
  raise warning 'cannot grant roster_app and roster_ops to %: run GRANT roster_app, roster_ops TO % as an administrator (roster doctor prints the statements)', v_owner, v_owner;
end
$$;

grant usage on schema public to roster_ops;
grant execute on function roster_scope_agent(), roster_scope_person(), roster_scope_audience() to roster_ops;

create function roster_scope_conversation() returns uuid
language sql stable
as $$ select nullif(current_setting('roster.conversation_id', true), '')::uuid $$;
grant execute on function roster_scope_conversation() to roster_app, roster_ops;

-- ---------------------------------------------------------------------------
-- Messages: who may read a line of the transcript.
--   visibility 'pair': said between person_id and agent_id alone (a one-to-one
--   exchange with one agent). 'conversation': said to everyone in the
--   conversation (a group, or team mode).
-- ---------------------------------------------------------------------------
alter table messages
  add column visibility text not null default 'conversation' check (visibility in ('pair', 'conversation'));

-- Existing transcripts: a direct conversation's lines were between its
-- person and one agent unless the conversation was in team mode.
update messages m set visibility = 'pair', person_id = coalesce(m.person_id, c.person_id)
from conversations c
where c.id = m.conversation_id and c.kind = 'dm' and c.mode = 'solo' and m.role in ('person', 'agent');
update messages m set agent_id = c.agent_id
from conversations c
where c.id = m.conversation_id and m.visibility = 'pair' and m.role = 'person' and m.agent_id is null;

create index messages_pair_idx on messages (agent_id, person_id, created_at) where visibility = 'pair';

-- ---------------------------------------------------------------------------
-- Row-level security, enabled and forced, on every table that holds what
-- people said or facts about them. roster_ops gets one permissive policy per
-- table; roster_app gets policies keyed on its scope.
-- ---------------------------------------------------------------------------
alter table conversations enable row level security;
alter table conversations force row level security;
alter table messages enable row level security;
alter table messages force row level security;
alter table identities enable row level security;
alter table identities force row level security;
alter table link_codes enable row level security;
alter table link_codes force row level security;
alter table channel_bindings enable row level security;
alter table channel_bindings force row level security;

do $$
declare
  v_table text;
begin
  foreach v_table in array array[
    'facts', 'fact_embeddings', 'tombstones', 'conversations', 'messages', 'memory_events', 'outbox',
    'identities', 'link_codes', 'channel_bindings', 'learning_events', 'lessons', 'approvals',
    'mirror_cases', 'mirror_runs', 'episodes'
  ] loop
    execute format('create policy %I on %I for all to roster_ops using (true) with check (true)', v_table || '_ops', v_table);
  end loop;
end
$$;

-- What roster_ops may do: read and write the routing and learning tables,
-- never delete memory or its audit, never change the schema.
grant select on agents, people, embedding_models, roster_migrations to roster_ops;
grant insert, update on agents, people to roster_ops;
grant select, insert, update on identities, link_codes, channel_bindings, conversations, messages, conversation_marks to roster_ops;
grant select, insert, update on facts, tombstones, learning_events, lessons, approvals, mirror_cases, mirror_runs, episodes, outbox to roster_ops;
grant select, insert, update, delete on fact_embeddings to roster_ops;
grant select on memory_events to roster_ops;
grant insert on embedding_models to roster_ops;
grant execute on function roster_append_event(uuid, uuid, text, text, text, text, text, jsonb) to roster_ops;
grant execute on function roster_append_events(jsonb) to roster_ops;
grant execute on function roster_verify_events(uuid) to roster_ops;

-- Conversations: a direct conversation is its person's; any conversation is
-- readable inside a turn that runs in it.
create policy conversations_app_select on conversations for select to roster_app
  using (
    roster_scope_agent() is not null
    and (
      (kind = 'dm' and person_id = roster_scope_person() and roster_scope_audience() = 'private')
      or id = roster_scope_conversation()
    )
  );
create policy conversations_app_update on conversations for update to roster_app
  using (id = roster_scope_conversation() and roster_scope_agent() is not null)
  with check (id = roster_scope_conversation());
grant select on conversations to roster_app;
grant update (last_message_at) on conversations to roster_app;

-- Messages: an agent reads its own exchanges with the scope's person, and
-- what was said to everyone in the conversation its turn runs in.
create policy messages_app_select on messages for select to roster_app
  using (
    roster_scope_agent() is not null
    and (
      (visibility = 'pair' and agent_id = roster_scope_agent() and person_id = roster_scope_person()
        and roster_scope_audience() = 'private')
      or (visibility = 'conversation' and conversation_id = roster_scope_conversation())
    )
  );
-- An agent writes only its own replies, to the scope's person, in the turn's conversation.
create policy messages_app_insert on messages for insert to roster_app
  with check (
    role = 'agent'
    and agent_id = roster_scope_agent()
    and person_id is not distinct from roster_scope_person()
    and conversation_id = roster_scope_conversation()
  );
grant select, insert on messages to roster_app;

-- Identities: a person's own handles, in their own scope.
create policy identities_app_select on identities for select to roster_app
  using (person_id = roster_scope_person() and roster_scope_agent() is not null);
grant select on identities to roster_app;
-- link_codes and channel_bindings: roster_ops only (no policy for roster_app).

-- Learning events: the scope's agent and person.
drop policy learning_events_select on learning_events;
drop policy learning_events_insert on learning_events;
create policy learning_events_select on learning_events for select to roster_app
  using (agent_id = roster_scope_agent() and person_id is not distinct from roster_scope_person());
create policy learning_events_insert on learning_events for insert to roster_app
  with check (agent_id = roster_scope_agent() and person_id is not distinct from roster_scope_person());

-- What a scope reads of a row that belongs to an agent and, perhaps, one
-- person: the agent's own, agent-wide (no person) or its person's in a
-- private conversation. Inlined by the planner into each policy below.
create function roster_scope_reads(p_agent_id uuid, p_person_id uuid) returns boolean
language sql stable
as $$
  select p_agent_id = roster_scope_agent()
    and (p_person_id is null or (p_person_id = roster_scope_person() and roster_scope_audience() = 'private'))
$$;
grant execute on function roster_scope_reads(uuid, uuid) to roster_app;

-- Lessons and approvals: agent-wide ones (person_id null) ride in every
-- prompt of the agent; one drawn from one person's words stays with them.
alter table lessons add column person_id uuid references people (id);
alter table approvals add column person_id uuid references people (id);
drop policy lessons_select on lessons;
create policy lessons_select on lessons for select to roster_app
  using (roster_scope_reads(agent_id, person_id));
drop policy approvals_select on approvals;
drop policy approvals_insert on approvals;
create policy approvals_select on approvals for select to roster_app
  using (roster_scope_reads(agent_id, person_id));
-- An agent may only propose, for the person it is talking to.
create policy approvals_insert on approvals for insert to roster_app
  with check (
    agent_id = roster_scope_agent() and person_id is not distinct from roster_scope_person()
    and status = 'pending' and decided_by is null and decided_at is null
  );

-- Mirror cases and runs: the person whose correction it was.
alter table mirror_runs add column person_id uuid references people (id);
update mirror_runs r set person_id = c.person_id from mirror_cases c where c.id = r.case_id;
drop policy mirror_cases_select on mirror_cases;
create policy mirror_cases_select on mirror_cases for select to roster_app
  using (roster_scope_reads(agent_id, person_id));
drop policy mirror_runs_select on mirror_runs;
create policy mirror_runs_select on mirror_runs for select to roster_app
  using (roster_scope_reads(agent_id, person_id));

-- The outbox: jobs of the scope's agent, about its person or the agent as a whole.
alter table outbox add column person_id uuid references people (id);
drop policy outbox_insert on outbox;
drop policy outbox_select on outbox;
create policy outbox_insert on outbox for insert to roster_app
  with check (agent_id = roster_scope_agent() and person_id is not distinct from roster_scope_person());
create policy outbox_select on outbox for select to roster_app
  using (agent_id = roster_scope_agent() and person_id is not distinct from roster_scope_person());

-- Episodes stay as they were keyed (agent, and person in a private scope);
-- tombstones, memory_events, facts and fact_embeddings too.

-- The full-text arm and the forget of messages ran as an owner that skipped
-- row-level security; the owner is now bound by it and reads through
-- roster_ops's policies. Nothing to change in their bodies.

-- A conversation's turn, held by one process at a time (a lease, so that a
-- process that dies lets go), across every process that reaches the database.
alter table conversations
  add column turn_holder uuid,
  add column turn_expires_at timestamptz;

-- Messages the access policy refused are not kept: a count per account and day.
create table refused_messages (
  channel text not null,
  account text not null,
  day date not null,
  count integer not null default 0,
  primary key (channel, account, day)
);
grant select, insert, update on refused_messages to roster_ops;
