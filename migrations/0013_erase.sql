-- Forget reaches the files. A forget changes rows; the old versions of those
-- rows stay in table and index pages, TOAST and the WAL until something
-- rewrites them. A forget therefore queues an erase job, in its own
-- transaction, naming the tables it reached (names only, never words).
--
-- Many forgets in a burst make one pending erase: the row with the dedupe key
-- 'erase:pending' collects the union of their tables. The erase job claims it
-- when it starts (renames its key to 'erase:claimed:<id>', then
-- 'erase:done:<id>' once the files are rewritten), so a forget committed after
-- that queues the next erase. The row belongs to no agent and no person: one
-- erase serves everyone's forgets, and it carries nothing of theirs.
--
-- Runs as the owner (roster_app may insert only its own scope's jobs and may
-- not update any); names that are not tables of the schema are dropped.
create function roster_queue_erase(p_tables text[]) returns void
language sql
security definer
set search_path = public, pg_temp
as $$
  with asked as (
    select distinct name from unnest(p_tables) name
    where name in (select c.relname from pg_class c where c.relnamespace = 'public'::regnamespace and c.relkind = 'r')
  )
  insert into outbox (queue, name, payload, dedupe_key)
  values ('erase', 'erase-forgotten', jsonb_build_object('tables', (select coalesce(jsonb_agg(name order by name), '[]') from asked)), 'erase:pending')
  on conflict (dedupe_key) do update
  set payload = jsonb_build_object('tables', (
    select coalesce(jsonb_agg(name order by name), '[]')
    from (select jsonb_array_elements_text(outbox.payload -> 'tables') as name union select name from asked) merged
  ))
$$;
revoke all on function roster_queue_erase(text[]) from public;
grant execute on function roster_queue_erase(text[]) to roster_app, roster_ops;
