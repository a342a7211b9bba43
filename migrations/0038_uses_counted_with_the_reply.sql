-- A turn's uses, counted in the statement that stores its reply.
--
-- The facts a turn recalled were counted used in a statement of their own,
-- which also read (and locked) the agent's audit chain, before the reply's
-- statement carried their `use` events. The reply's transaction now opens by
-- locking the chain and reading its head, so the events are linked before any
-- statement, and this function, carried by the reply's statement, counts the
-- uses and stores the events: all of them or none. It runs as its caller
-- (row-level security decides which facts it sees) and takes only the facts
-- it can lock at once: the chain is locked before the facts here, while
-- every other writer locks a fact before the chain, so waiting for one could
-- deadlock. It returns false, having counted nothing, when a fact is no
-- longer one search reads or another transaction holds it; the caller then
-- counts what it can (memory.countUses).

create function roster_count_uses(p_uses jsonb)
returns boolean
language plpgsql
security invoker
set search_path = public, pg_temp
as $$
declare
  v_ids uuid[] := array(select distinct u::uuid from jsonb_array_elements_text(p_uses->'ids') u);
  v_trust text[] := array(select t from jsonb_array_elements_text(p_uses->'trust') t);
  v_held integer;
begin
  select count(*) into v_held
  from (select 1 from facts f where f.id = any(v_ids) and f.trust = any(v_trust) for update skip locked) held;
  if v_held <> cardinality(v_ids) then
    return false;
  end if;
  update facts f set uses = f.uses + 1, last_used_at = now() where f.id = any(v_ids);
  perform roster_insert_events(p_uses->'events');
  return true;
end
$$;
revoke all on function roster_count_uses(jsonb) from public;
grant execute on function roster_count_uses(jsonb) to roster_app;
