-- Channels are plugins: a channel's name is whatever a registered plugin
-- calls itself, so the schema no longer lists them. Each CHECK that named the
-- four channels of the time (identities, conversations, channel_bindings,
-- channel_credentials, approval_pushes, and any other table's channel column)
-- becomes the contract's shape of a name (`channelNamePattern` in
-- @roster/contracts: a lower-case letter, then letters, digits or -, 2 to 31
-- in all). A fifth channel needs no migration.
--
-- Bound channels (rooms where every message is for the bot, without a
-- mention) were Discord's alone and checked as Discord's ids here; the plugin
-- that has them now checks their form, and the schema keeps the bounds that
-- hold for any platform: at most 100, none empty or null, none with a comma.
do $plugins$
declare
  item record;
begin
  for item in
    select c.conrelid::regclass as table_name, c.conname
    from pg_constraint c
    join pg_attribute a on a.attrelid = c.conrelid and a.attnum = any (c.conkey)
    where c.contype = 'c' and c.connamespace = 'public'::regnamespace and a.attname = 'channel'
      and pg_get_constraintdef(c.oid) like '%telegram%'
  loop
    execute format('alter table %s drop constraint %I', item.table_name, item.conname);
    execute format('alter table %s add constraint %I check (channel ~ %L)', item.table_name, item.conname, '^[a-z][a-z0-9-]{1,30}$');
  end loop;
end
$plugins$;

alter table channel_bindings drop constraint channel_bindings_bound_channels_check;
alter table channel_bindings
  add constraint channel_bindings_bound_channels_check check (
    cardinality(bound_channels) <= 100
    and array_position(bound_channels, null) is null
    and array_position(bound_channels, '') is null
    and array_to_string(bound_channels, '') !~ ','
    and length(array_to_string(bound_channels, '')) <= 100 * 255
  );
