-- One holder per bot account. A platform lets one session receive for a bot
-- (Telegram answers a second long poll 409 and the first one stops; Discord
-- has one gateway session per shard; a second WhatsApp socket logs both
-- out), so of any number of gateways, on any number of machines, exactly one
-- serves each channel account: the holder of its lease. The others stand by
-- and take it over when it lapses; a clean stop releases it at once.
--
-- `token` grows by one at every change of holder (a fencing token): a
-- gateway that was paused past its lease finds, at its next renewal, that
-- its token is no longer the row's and stops before it sends again.
-- Ids, names and times: nothing a person said.
create table channel_leases (
  channel text not null check (channel ~ '^[a-z][a-z0-9-]{1,30}$'),
  account text not null,
  holder text not null,
  token bigint not null,
  acquired_at timestamptz not null default now(),
  renewed_at timestamptz not null default now(),
  expires_at timestamptz not null,
  primary key (channel, account)
);

grant select, insert, update, delete on channel_leases to roster_ops;
