-- What a bot account's last holder said when it let go, so that `roster
-- channel list`, `roster doctor`, `/healthz` and the page can say why nobody
-- receives it: `released_at` is set when a holder lets the lease go (a clean
-- stop, or its channel stopped on its own), `last_error` is the reason when it
-- let go because the channel failed (its platform's words, never a secret).
-- Both are cleared when a gateway takes the account. A lease that lapsed with
-- neither set is one whose holder vanished (killed, or cut off from the
-- database). Additive: the lease itself is unchanged.
alter table channel_leases
  add column last_error text check (char_length(last_error) <= 500),
  add column released_at timestamptz;

-- The fence on stored messages: a gateway stores what a bot account received
-- (and the replies to it) only while it holds the account under the token it
-- was given. Called in the storing transaction, it locks the lease row
-- (for share) until that transaction ends, so a takeover (which updates the
-- row) waits for the store to commit, and a store after a takeover sees the
-- new token and is refused. Security definer: the agents' scoped roles store
-- replies and read no lease.
create function roster_lease_holds(p_channel text, p_account text, p_holder text, p_token bigint)
returns boolean
language sql
security definer
set search_path = public, pg_temp
as $$
  select exists (
    select 1 from channel_leases
    where channel = p_channel and account = p_account and holder = p_holder and token = p_token and expires_at >= now()
    for share
  )
$$;

revoke all on function roster_lease_holds(text, text, text, bigint) from public;
grant execute on function roster_lease_holds(text, text, text, bigint) to roster_app, roster_ops;
