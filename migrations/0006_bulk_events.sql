-- Append many events in one statement, in order, each exactly as
-- roster_append_event would (same chain, same checks): a batch job such as
-- fade sends one statement per batch instead of one per fact.
create function roster_append_events(p_events jsonb)
returns integer
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
  v_event jsonb;
  v_count integer := 0;
begin
  for v_event in select value from jsonb_array_elements(p_events) loop
    perform roster_append_event(
      (v_event->>'agent_id')::uuid,
      nullif(v_event->>'person_id', '')::uuid,
      v_event->>'actor_kind',
      v_event->>'actor_id',
      v_event->>'action',
      v_event->>'target_kind',
      v_event->>'target_id',
      coalesce(v_event->'detail', '{}'::jsonb)
    );
    v_count := v_count + 1;
  end loop;
  return v_count;
end
$$;
revoke all on function roster_append_events(jsonb) from public;
grant execute on function roster_append_events(jsonb) to roster_app;
