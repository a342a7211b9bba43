-- Channel credentials entered on the page or with `roster channel add`: bot
-- tokens, signing secrets. Each value is sealed with the installation key
-- (AES-256-GCM; the channel, account and name are its authenticated
-- context), so a copy of the database without the key holds no usable
-- token, and a sealed value moved to another row does not open there. Write
-- only: the API and the CLI say which names are set, never what they hold.
create table channel_credentials (
  channel text not null check (channel in ('telegram', 'discord', 'slack', 'whatsapp')),
  account text not null default 'default' check (account ~ '^[A-Za-z0-9_.:-]{1,64}$'),
  name text not null check (name ~ '^[a-z][a-z_]{0,39}$'),
  sealed text not null check (sealed ~ '^v1\.'),
  updated_at timestamptz not null default now(),
  primary key (channel, account, name)
);

alter table channel_credentials enable row level security;
alter table channel_credentials force row level security;
create policy channel_credentials_ops on channel_credentials for all to roster_ops using (true) with check (true);
grant select, insert, update, delete on channel_credentials to roster_ops;
