-- Forget reaches the planner's statistics. ANALYZE (the vacuum job on the
-- embedded database, autovacuum on a server) copies sampled values of every
-- column into pg_statistic: the most common values and histogram bounds of a
-- text column are whole sentences people said. Nothing rewrote those rows
-- after a forget, so the words stayed in the catalog and on disk.
--
-- The columns that can hold a person's words (the `erased` places of
-- @roster/memory's forget-places.ts) keep no statistics at all from now on:
-- the planner still has each table's row count and every other column's
-- statistics (agent, person, trust, times), and estimates these columns'
-- selectivity from its defaults.
--
-- The rows already sampled are removed. Postgres 18 (the embedded database)
-- lets the table's owner clear them. An older server has no such function and
-- lets only a superuser delete from pg_statistic; there each column is sampled
-- once more at the smallest target (a minimum and a maximum of the values the
-- rows hold now, none of them forgotten) before its statistics are turned off,
-- and the erase job does the same after every forget.
--
-- The bytes of the removed rows stay in pg_statistic's pages until it is
-- rewritten: when there were any, an erase is queued, and on the embedded
-- database the erase job rewrites pg_statistic (VACUUM FULL) before it
-- retires the WAL.
do $statistics$
declare
  place record;
  clearable boolean := to_regprocedure('pg_catalog.pg_clear_attribute_stats(text,text,text,boolean)') is not null;
  sampled text[] := '{}';
begin
  for place in
    select * from (values
      ('facts', 'content'), ('facts', 'search_vector'), ('facts', 'content_hash'),
      ('fact_embeddings', 'embedding'),
      ('messages', 'content'),
      ('learning_events', 'text'),
      ('mirror_cases', 'text'), ('mirror_cases', 'text_hash'),
      ('mirror_runs', 'answer'), ('mirror_runs', 'reason'), ('mirror_runs', 'lessons_shown'),
      ('episodes', 'summary'),
      ('approvals', 'text'), ('approvals', 'evidence'),
      ('lessons', 'text'), ('lessons', 'text_hash'), ('lessons', 'minhash'), ('lessons', 'evidence'),
      ('outbox', 'payload'), ('outbox', 'last_error')
    ) as places (table_name, column_name)
  loop
    -- pg_stats shows the owner its own tables' samples, except where the table forces row-level security (all of these do):
    -- lifted for this look only, inside the migration's transaction (pg_statistic itself is a superuser's).
    execute format('alter table public.%I no force row level security', place.table_name);
    if exists (select 1 from pg_stats s where s.schemaname = 'public' and s.tablename = place.table_name and s.attname = place.column_name) then
      sampled := sampled || place.table_name;
    end if;
    execute format('alter table public.%I force row level security', place.table_name);
    if clearable then
      execute format('alter table public.%I alter column %I set statistics 0', place.table_name, place.column_name);
      perform pg_catalog.pg_clear_attribute_stats('public', place.table_name, place.column_name, false);
    else
      execute format('alter table public.%I alter column %I set statistics 1', place.table_name, place.column_name);
      execute format('analyze public.%I (%I)', place.table_name, place.column_name);
      execute format('alter table public.%I alter column %I set statistics 0', place.table_name, place.column_name);
    end if;
  end loop;
  if cardinality(sampled) > 0 then
    perform roster_queue_erase(sampled);
  end if;
end
$statistics$;
