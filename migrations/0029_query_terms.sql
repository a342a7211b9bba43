-- How rare each word of a query is in the scope, for telling a relevant
-- search result from the best of nothing.
--
-- Search always finds its top k, related or not. Whether a result is
-- relevant is decided by the share of the query's weight that it holds: each
-- query word weighs its inverse document frequency in the scope (BM25's idf),
-- a word no fact holds weighs the most, and a result holding only the common
-- words of a question ("Caroline") against its rare ones ("locker") holds
-- little of it (search.ts, `relevanceFloor`). This function gives each query
-- word as the facts' search_vector holds it (stemmed, stop words left out)
-- and the number of the scope's readable facts holding it, applying the scope
-- rule itself as roster_search_ranked (0024) does, so that the GIN index
-- serves each count. p_facts, when given, is the scope's N; null counts it.

create function roster_query_terms(p_text text, p_facts bigint default null)
returns table (lexeme text, df bigint, scope_facts bigint)
language plpgsql
stable
security definer
set search_path = public, pg_temp
set jit = off
as $$
declare
  v_agent uuid := roster_scope_agent();
  v_person uuid := roster_scope_person();
  v_private boolean := coalesce(roster_scope_audience() = 'private', false);
  v_lexemes text[];
  v_facts bigint := p_facts;
begin
  if v_agent is null then
    return;
  end if;
  v_lexemes := array(select l from unnest(tsvector_to_array(to_tsvector('english', p_text))) l limit 64);
  if cardinality(v_lexemes) = 0 then
    return;
  end if;
  if v_facts is null then
    select count(*) into v_facts
    from facts f
    where f.agent_id = v_agent
      and (f.audience = 'agent' or (v_private and f.person_id = v_person))
      and f.trust in ('candidate', 'active', 'verified')
      and f.superseded_at is null
      and (f.valid_to is null or f.valid_to > now());
  end if;
  return query
  select q.l, (
    select count(*)
    from facts f
    where f.search_vector @@ roster_quote_lexeme(q.l)::tsquery
      and f.agent_id = v_agent
      and (f.audience = 'agent' or (v_private and f.person_id = v_person))
      and f.trust in ('candidate', 'active', 'verified')
      and f.superseded_at is null
      and (f.valid_to is null or f.valid_to > now())
  ), v_facts
  from unnest(v_lexemes) q(l);
end
$$;
revoke all on function roster_query_terms(text, bigint) from public;
grant execute on function roster_query_terms(text, bigint) to roster_app;
