-- A channel handle whose person cannot be reached: they blocked the bot,
-- left the workspace, or the platform refuses to deliver to them. Sending to
-- them fails without failing the turn; the time is kept so that pushes (the
-- owner's approvals) skip the handle until the person writes again, which
-- clears it. No words, only a time.
alter table identities add column unreachable_at timestamptz;

-- The owner's tools remove a channel binding (roster channel remove): the
-- account then pairs again and talks to the wallet. Conversations keep their
-- history and drop the reference first.
grant delete on channel_bindings to roster_ops;
