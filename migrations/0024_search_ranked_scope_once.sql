-- The full-text arm reads the scope once and can be told its size.
--
-- roster_search_ranked (0019) applied the scope rule to every row through
-- roster_scope_agent() and its siblings: each is a lookup of a setting by
-- name and a parse of a uuid, evaluated per row, and the count of the scope's
-- facts for BM25's N went through all of them. On the embedded database that
-- count alone took about 11 ms of a 15 ms search at 10,000 facts. Here the
-- scope is read into variables once, so each statement compares columns with
-- constants (and can use an index on them), and the caller may pass N, which
-- learns from the first search (each row carries the N it used) and keeps
-- for a few minutes once the scope is large (search.ts): N only weighs rare
-- words against common ones, and in a scope of thousands a few facts more or
-- less do not move it. With p_facts null the function counts, as before.
-- Each hit's words are looked up in its sorted tsvector instead of unnested
-- into an array to compare (a fifth to a third less time for a query whose
-- words are in a thousand facts). Scores are unchanged.

drop function roster_search_ranked(text, integer, real);

create function roster_search_ranked(p_text text, p_limit integer, p_neighbour real, p_facts bigint default null)
returns table (id uuid, score real, own real, scope_facts bigint)
language plpgsql
stable
security definer
set search_path = public, pg_temp
-- The planner cannot know a scope's size; without this it may sort a whole
-- scope to find one neighbour instead of walking facts_agent_recorded_idx.
set enable_sort = off
-- See 0023: the sort penalty above would otherwise make a server JIT-compile every search.
set jit = off
as $$
declare
  v_agent uuid := roster_scope_agent();
  v_person uuid := roster_scope_person();
  v_private boolean := coalesce(roster_scope_audience() = 'private', false);
  v_lexemes text[];
  v_query tsquery;
  v_terms tsquery[];
  v_facts bigint := p_facts;
  v_limit integer := least(greatest(p_limit, 1), 1000);
begin
  -- With no scope it finds nothing.
  if v_agent is null then
    return;
  end if;
  -- The query's words as the facts' search_vector holds them: stemmed, stop words left out.
  v_lexemes := array(select l from unnest(tsvector_to_array(to_tsvector('english', p_text))) l limit 64);
  if cardinality(v_lexemes) = 0 then
    return;
  end if;
  -- Any of the words (OR), as people expect of a search box.
  v_terms := array(select roster_quote_lexeme(l)::tsquery from unnest(v_lexemes) l);
  v_query := array_to_string(array(select roster_quote_lexeme(l) from unnest(v_lexemes) l), ' | ')::tsquery;
  -- N of BM25's idf: the facts the scope reads, unless the caller knows it.
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
  with hits as materialized (
    select f.id, f.recorded_at, f.search_vector as vector, length(f.search_vector) as dl
    from facts f
    where f.search_vector @@ v_query
      and f.agent_id = v_agent
      and (f.audience = 'agent' or (v_private and f.person_id = v_person))
      and f.trust in ('candidate', 'active', 'verified')
      and f.superseded_at is null
      and (f.valid_to is null or f.valid_to > now())
  ),
  matches as materialized (
    -- Each query word a hit holds, once.
    select h.id, h.recorded_at, h.dl, q.l as lexeme
    from hits h cross join unnest(v_lexemes, v_terms) as q(l, t)
    where h.vector @@ q.t
  ),
  frequencies as materialized (
    select m.lexeme, count(*)::float8 as df from matches m group by m.lexeme
  ),
  stats as materialized (
    select greatest(v_facts, count(*))::float8 as n, greatest(avg(h.dl)::float8, 1) as avgdl from hits h
  ),
  scored as materialized (
    -- BM25 with the usual k1 = 1.2, b = 0.75; a word counts once per fact
    -- (facts are short), and a fact's length is its number of distinct words.
    select m.id, m.recorded_at,
           sum(ln(1 + (s.n - fr.df + 0.5) / (fr.df + 0.5)) * 2.2 / (1 + 1.2 * (0.25 + 0.75 * m.dl / s.avgdl)))::float8 as score
    from matches m
    join frequencies fr on fr.lexeme = m.lexeme
    cross join stats s
    group by m.id, m.recorded_at
  ),
  seeds as materialized (
    select sc.id, sc.recorded_at, sc.score from scored sc order by sc.score desc, sc.recorded_at desc limit v_limit
  ),
  near as (
    select n.id, p_neighbour * sd.score as score
    from seeds sd
    cross join lateral (
      (select f.id from facts f
       where f.agent_id = v_agent
         and f.recorded_at < sd.recorded_at
         and (f.audience = 'agent' or (v_private and f.person_id = v_person))
         and f.trust in ('candidate', 'active', 'verified')
         and f.superseded_at is null
         and (f.valid_to is null or f.valid_to > now())
       order by f.agent_id desc, f.recorded_at desc, f.id desc
       limit 1)
      union all
      (select f.id from facts f
       where f.agent_id = v_agent
         and f.recorded_at > sd.recorded_at
         and (f.audience = 'agent' or (v_private and f.person_id = v_person))
         and f.trust in ('candidate', 'active', 'verified')
         and f.superseded_at is null
         and (f.valid_to is null or f.valid_to > now())
       order by f.agent_id, f.recorded_at, f.id
       limit 1)
    ) n
    where p_neighbour > 0
  ),
  combined as (
    select c.id, max(c.own) as own, max(c.near) as near
    from (
      select sc.id, sc.score as own, 0::float8 as near from scored sc
      union all
      select nr.id, 0::float8, nr.score from near nr
    ) c
    group by c.id
  )
  select c.id, (c.own + c.near)::real, c.own::real, v_facts
  from combined c
  join facts f on f.id = c.id
  order by c.own + c.near desc, f.recorded_at desc, c.id
  limit v_limit;
end
$$;
revoke all on function roster_search_ranked(text, integer, real, bigint) from public;
grant execute on function roster_search_ranked(text, integer, real, bigint) to roster_app;
