-- Roster foundation: pgvector, the application role, scope helpers, and the
-- first tables (agents, people, identities, facts) with row-level security.
-- Append-only: never edit this file once it has landed; add the next one.

create extension if not exists vector;

-- The unprivileged role every scoped transaction switches to (SET LOCAL ROLE).
-- Roles are shared by a whole Postgres cluster, so two databases may race to
-- create it: either outcome is fine.
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'roster_app') then
    begin
      create role roster_app nologin noinherit;
    exception when duplicate_object or unique_violation then
      null;
    end;
  end if;
end
$$;

-- The connecting user must be allowed to switch to it. A superuser always is;
-- a plain owner needs the membership, which it can grant itself when it
-- created the role.
do $$
begin
  if not exists (select 1 from pg_roles where rolname = current_user and rolsuper)
     and not pg_has_role(current_user, 'roster_app', 'member') then
    execute format('grant roster_app to %I', current_user);
  end if;
exception when insufficient_privilege then
  raise warning 'cannot grant roster_app to %: ask a superuser to run GRANT roster_app TO %', current_user, current_user;
end
$$;

grant usage on schema public to roster_app;

-- Scope, as set by withScope with set_config(..., true). Unset or empty means
-- null, and every policy below compares with it, so no scope reads nothing.
create function roster_scope_agent() returns uuid
language sql stable
as $$ select nullif(current_setting('roster.agent_id', true), '')::uuid $$;

create function roster_scope_person() returns uuid
language sql stable
as $$ select nullif(current_setting('roster.person_id', true), '')::uuid $$;

create function roster_scope_audience() returns text
language sql stable
as $$ select nullif(current_setting('roster.audience', true), '') $$;

grant execute on function roster_scope_agent(), roster_scope_person(), roster_scope_audience() to roster_app;

create table agents (
  id uuid primary key default gen_random_uuid(),
  name text not null check (name ~ '^[A-Za-z][A-Za-z0-9_-]{0,39}$'),
  job text not null check (length(job) between 1 and 500),
  instructions text not null default '',
  engine text not null default 'offline',
  status text not null default 'active' check (status in ('active', 'archived')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index agents_name_key on agents (lower(name));

create table people (
  id uuid primary key default gen_random_uuid(),
  name text not null check (length(name) between 1 and 80),
  role text not null default 'member' check (role in ('owner', 'member', 'guest')),
  created_at timestamptz not null default now()
);
create unique index people_name_key on people (lower(name));

create table identities (
  id uuid primary key default gen_random_uuid(),
  person_id uuid not null references people (id) on delete cascade,
  channel text not null check (channel in ('web', 'cli', 'telegram', 'discord', 'slack', 'whatsapp')),
  external_id text not null check (length(external_id) between 1 and 200),
  display_name text,
  created_at timestamptz not null default now(),
  unique (channel, external_id)
);

-- Routing tables: the application role reads agents and people (names, jobs)
-- but only the owner's tools write them. Identities hold handles (phone
-- numbers, user ids) and stay with the owner's tools alone.
grant select on agents, people to roster_app;

create table facts (
  id uuid primary key default gen_random_uuid(),
  agent_id uuid not null references agents (id),
  -- null: agent-wide knowledge, not about or from one person.
  person_id uuid references people (id),
  audience text not null default 'private' check (audience in ('private', 'agent')),
  content text not null check (length(content) <= 4000),
  content_hash text not null,
  category text not null default 'general',
  trust text not null default 'active'
    check (trust in ('candidate', 'active', 'verified', 'disputed', 'retracted', 'rejected', 'faded', 'forgotten')),
  valid_from timestamptz not null default now(),
  valid_to timestamptz,
  recorded_at timestamptz not null default now(),
  superseded_at timestamptz,
  superseded_by uuid references facts (id),
  source_message_ids uuid[] not null default '{}',
  actor_kind text not null default 'person' check (actor_kind in ('person', 'agent', 'job', 'owner')),
  actor_id text,
  channel text,
  tool text,
  untrusted_input boolean not null default false,
  uses integer not null default 0,
  last_used_at timestamptz,
  check (audience = 'agent' or person_id is not null),
  check (valid_to is null or valid_to >= valid_from)
);
create index facts_scope_idx on facts (agent_id, person_id, trust);

alter table facts enable row level security;
alter table facts force row level security;

-- Read: the scope's agent only; private facts only to their own person in a
-- private (direct) conversation; agent-wide facts to everyone of that agent.
create policy facts_select on facts for select to roster_app
  using (
    agent_id = roster_scope_agent()
    and (audience = 'agent' or (person_id = roster_scope_person() and roster_scope_audience() = 'private'))
  );

-- Write: only into the scope's agent, and only about the scope's person or
-- agent-wide; a private fact must belong to the scope's person.
create policy facts_insert on facts for insert to roster_app
  with check (
    agent_id = roster_scope_agent()
    and (person_id is null or person_id = roster_scope_person())
    and (audience = 'agent' or person_id = roster_scope_person())
  );

create policy facts_update on facts for update to roster_app
  using (
    agent_id = roster_scope_agent()
    and (audience = 'agent' or (person_id = roster_scope_person() and roster_scope_audience() = 'private'))
  )
  with check (
    agent_id = roster_scope_agent()
    and (person_id is null or person_id = roster_scope_person())
    and (audience = 'agent' or person_id = roster_scope_person())
  );

-- No delete: memory is never deleted by the application, only retracted,
-- faded or forgotten (content erased, tombstone kept).
grant select, insert, update on facts to roster_app;
