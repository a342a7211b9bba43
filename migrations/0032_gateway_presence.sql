-- The gateways standing for each channel now: every gateway configured for
-- a channel whose account is received in parts (Discord's gateway shards,
-- one lease each) keeps a row here, renewed with its leases, and removed
-- when it stops. How many rows are live says how many gateways share the
-- parts, so each takes its fair share (two gateways, two shards: one each)
-- and one alone takes them all. Ids and times only.
create table gateway_presence (
  channel text not null check (channel ~ '^[a-z][a-z0-9-]{1,30}$'),
  holder text not null,
  started_at timestamptz not null default now(),
  expires_at timestamptz not null,
  primary key (channel, holder)
);

grant select, insert, update, delete on gateway_presence to roster_ops;
