-- Which owner handles an approval was pushed to, on which channel: a gateway
-- that restarts, or a second gateway of the same channel, does not push the
-- same approval to the same owner again. Handles and times only, no words.
create table approval_pushes (
  approval_id uuid not null references approvals (id) on delete cascade,
  channel text not null check (channel in ('telegram', 'discord', 'slack', 'whatsapp')),
  external_id text not null,
  pushed_at timestamptz not null default now(),
  primary key (approval_id, channel, external_id)
);

alter table approval_pushes enable row level security;
alter table approval_pushes force row level security;
create policy approval_pushes_ops on approval_pushes for all to roster_ops using (true) with check (true);
grant select, insert on approval_pushes to roster_ops;
