-- Purge: everything of an agent is forgotten, and its row stays as a
-- tombstone for the audit chain (its name is free again).
alter table agents drop constraint agents_status_check;
alter table agents add constraint agents_status_check check (status in ('active', 'archived', 'purged'));
drop index agents_name_key;
create unique index agents_name_key on agents (lower(name)) where status <> 'purged';

-- Erase the words of everything an agent holds beyond its facts (which
-- memory forgets one by one, with tombstones): the lines said between a
-- person and it alone and its own replies everywhere, learning events,
-- mirror cases and runs, episodes, lessons, approvals, and jobs not yet
-- handed to the queue. What a person said to a whole group or team stays:
-- other agents heard it. Returns how many rows each place lost the words in.
create function roster_purge_agent(p_agent uuid)
returns jsonb
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
  v_counts jsonb := '{}';
  v_count integer;
begin
  if not exists (select 1 from agents where id = p_agent and status = 'archived') then
    raise exception 'only an archived agent can be purged' using errcode = '55000';
  end if;

  update messages set content = '', forgotten_at = coalesce(forgotten_at, now())
  where agent_id = p_agent and (content <> '' or forgotten_at is null);
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('messages', v_count);

  update learning_events set text = '', reviewed_at = coalesce(reviewed_at, now()), harvested_at = coalesce(harvested_at, now())
  where agent_id = p_agent and text <> '';
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('learning_events', v_count);

  update mirror_cases set text = '', text_hash = 'forgotten:' || id::text
  where agent_id = p_agent and text_hash not like 'forgotten:%';
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('mirror_cases', v_count);

  update mirror_runs set answer = '', reason = '', lessons_shown = '[]'
  where agent_id = p_agent and (answer <> '' or reason <> '' or lessons_shown <> '[]');
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('mirror_runs', v_count);

  update episodes set summary = '', stale = false, source_message_ids = '{}', updated_at = now()
  where agent_id = p_agent and (summary <> '' or stale);
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('episodes', v_count);

  update approvals set text = '[purged]', evidence = '[]', status = case when status = 'pending' then 'rejected' else status end
  where agent_id = p_agent and text <> '[purged]';
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('approvals', v_count);

  update lessons set text = '[purged]', text_hash = 'forgotten:' || id::text, minhash = '{}', evidence = '[]',
         status = 'retired', retired_at = coalesce(retired_at, now()), retired_reason = 'purged'
  where agent_id = p_agent and text_hash not like 'forgotten:%';
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('lessons', v_count);

  update outbox set payload = '{}', relayed_at = coalesce(relayed_at, now()), last_error = 'the agent was purged'
  where agent_id = p_agent and relayed_at is null;
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('outbox', v_count);

  update agents set status = 'purged', instructions = '', updated_at = now() where id = p_agent;
  return v_counts;
end
$$;
revoke all on function roster_purge_agent(uuid) from public;
grant execute on function roster_purge_agent(uuid) to roster_ops;
