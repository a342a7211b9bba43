-- What a gateway takes from a platform, kept before the platform counts it
-- delivered. Telegram confirms the updates of one poll with the next; a
-- gateway stopped (or killed) after that and before it answered lost them.
-- Now the holder of a bot account's lease stores each message it takes here
-- first (the next poll waits for it), answers it, then deletes the row; the
-- next holder of the account answers whatever is left, in the order it was
-- taken. A row lives for the length of a turn.
--
-- `event` holds what the person said while the message waits, and `sender`
-- their handle: a forget reaches the first (roster_forget_inbox, below) and
-- a person's erasure deletes their rows. Neither keeps planner statistics
-- (see 0025).
create table channel_inbox (
  id bigserial primary key,
  channel text not null check (channel ~ '^[a-z][a-z0-9-]{1,30}$'),
  account text not null,
  delivery_id text not null,
  sender text not null,
  event jsonb not null,
  taken_at timestamptz not null default now(),
  unique (channel, account, delivery_id)
);
alter table channel_inbox alter column sender set statistics 0, alter column event set statistics 0;

-- Only roster_ops (the gateways' routing and the erasure) reads or writes it; the agents' scoped role has no right to it.
alter table channel_inbox enable row level security;
alter table channel_inbox force row level security;
create policy channel_inbox_ops on channel_inbox for all to roster_ops using (true) with check (true);
grant select, insert, delete on channel_inbox to roster_ops;
grant usage on sequence channel_inbox_id_seq to roster_ops;

-- A forget's words, erased from the messages still waiting in an inbox: those
-- the scope's person sent that hold one of the phrases keep no words, only a
-- mark that they were forgotten (the gateway that finds one answers nothing).
-- Security definer: the agents' scoped roles read no inbox. Returns how many
-- rows lost their words.
create function roster_forget_inbox(p_phrases text[])
returns integer
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
  v_person uuid := roster_scope_person();
  v_count integer;
begin
  if roster_scope_agent() is null then
    raise exception 'roster_forget_inbox needs a scope' using errcode = '42501';
  end if;
  update channel_inbox i set event = '{"forgotten": true}'
  where exists (select 1 from identities d where d.person_id = v_person and d.channel = i.channel and d.external_id = i.sender)
    and i.event ? 'inbound'
    and roster_holds_phrase(concat_ws(' ', i.event #>> '{inbound,text}', i.event #>> '{inbound,quoted}'), p_phrases);
  get diagnostics v_count = row_count;
  return v_count;
end
$$;
revoke all on function roster_forget_inbox(text[]) from public;
grant execute on function roster_forget_inbox(text[]) to roster_app, roster_ops;
