-- Discord's bound channels: server text channels, by id, in which every
-- message from a person is for the bot, without a mention (elsewhere in a
-- server it answers only when mentioned or replied to). They belong to the
-- bot's binding, set with `roster channel add discord --channel ID`;
-- DISCORD_CHANNELS, when set, wins. Only Discord has them, and each is a
-- snowflake (17 to 20 digits), at most 100 of them.
alter table channel_bindings
  add column bound_channels text[] not null default '{}';

alter table channel_bindings
  add constraint channel_bindings_bound_channels_check check (
    cardinality(bound_channels) <= 100
    and (cardinality(bound_channels) = 0 or channel = 'discord')
    and array_position(bound_channels, null) is null
    and array_to_string(bound_channels, ',') ~ '^([0-9]{17,20}(,[0-9]{17,20})*)?$'
  );
