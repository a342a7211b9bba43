-- The full-text arm of memory search as one function. Row-level security
-- keeps non-leakproof operators such as tsvector @@ tsquery from being used
-- as index conditions, so under a policy the GIN index was never used and
-- every fact of the scope was matched one by one. This function runs as the
-- owner and applies the same scope rule itself, in the database: the fact's
-- agent is the scope's, and a private fact is read only by its own person in
-- a private conversation. With no scope it finds nothing.
create function roster_search_full_text(p_query text, p_limit integer)
returns table (id uuid, score real)
language sql
stable
security definer
set search_path = public, pg_temp
as $$
  select f.id, ts_rank_cd(f.search_vector, to_tsquery('english', p_query)) as score
  from facts f
  where f.search_vector @@ to_tsquery('english', p_query)
    and f.agent_id = roster_scope_agent()
    and (f.audience = 'agent' or (f.person_id = roster_scope_person() and roster_scope_audience() = 'private'))
    and f.trust in ('candidate', 'active', 'verified')
    and (f.valid_to is null or f.valid_to > now())
  order by score desc, f.recorded_at desc
  limit least(greatest(p_limit, 1), 1000)
$$;
revoke all on function roster_search_full_text(text, integer) from public;
grant execute on function roster_search_full_text(text, integer) to roster_app;
