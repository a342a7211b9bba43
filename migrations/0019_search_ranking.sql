-- The full-text arm ranks by BM25 and lends part of a strong match's score
-- to the facts recorded just before and after it in the same scope.
--
-- ts_rank_cd counts every matched word alike, so a word found in half of a
-- scope's facts (a name, a verb said every day) weighs as much as the rare
-- word that tells the facts apart. BM25 weighs each word by how rare it is
-- in the scope (inverse document frequency over the facts the scope reads)
-- and damps long facts. Facts said one after the other often answer one
-- another ("Did you run it?" / "Yes, in May"): the fact recorded next to a
-- strong match is likely relevant too, even when it shares no word with the
-- query. Both are measured on LoCoMo in docs/benchmarks.md.
--
-- Like roster_search_full_text, the function runs as the owner and applies
-- the scope rule itself (agent, and private facts only to their own person in
-- a private conversation), to every row it reads, neighbours included. With
-- no scope it finds nothing.

-- Neighbours in record order, within one agent.
create index facts_agent_recorded_idx on facts (agent_id, recorded_at, id);

-- One lexeme as a tsquery operand, quoted so that any character is taken as it is.
create function roster_quote_lexeme(p_lexeme text) returns text
language sql
immutable
strict
parallel safe
as $$ select '''' || replace(replace(p_lexeme, '\', '\\'), '''', '''''') || '''' $$;

create function roster_search_ranked(p_text text, p_limit integer, p_neighbour real)
returns table (id uuid, score real, own real)
language plpgsql
stable
security definer
set search_path = public, pg_temp
-- The planner cannot know a scope's size; without this it may sort a whole
-- scope to find one neighbour instead of walking facts_agent_recorded_idx.
set enable_sort = off
as $$
declare
  v_lexemes text[];
  v_query tsquery;
  v_facts bigint;
  v_limit integer := least(greatest(p_limit, 1), 1000);
begin
  -- The query's words as the facts' search_vector holds them: stemmed, stop words left out.
  v_lexemes := array(select l from unnest(tsvector_to_array(to_tsvector('english', p_text))) l limit 64);
  if cardinality(v_lexemes) = 0 then
    return;
  end if;
  -- Any of the words (OR), as people expect of a search box.
  v_query := array_to_string(array(select roster_quote_lexeme(l) from unnest(v_lexemes) l), ' | ')::tsquery;
  -- N of BM25's idf: the facts the scope reads.
  select count(*) into v_facts
  from facts f
  where f.agent_id = roster_scope_agent()
    and (f.audience = 'agent' or (f.person_id = roster_scope_person() and roster_scope_audience() = 'private'))
    and f.trust in ('candidate', 'active', 'verified')
    and f.superseded_at is null
    and (f.valid_to is null or f.valid_to > now());

  return query
  with hits as materialized (
    select f.id, f.recorded_at, f.search_vector as vector, length(f.search_vector) as dl
    from facts f
    where f.search_vector @@ v_query
      and f.agent_id = roster_scope_agent()
      and (f.audience = 'agent' or (f.person_id = roster_scope_person() and roster_scope_audience() = 'private'))
      and f.trust in ('candidate', 'active', 'verified')
      and f.superseded_at is null
      and (f.valid_to is null or f.valid_to > now())
  ),
  matches as materialized (
    -- Each query word a hit holds, once.
    select h.id, h.recorded_at, h.dl, l as lexeme
    from hits h cross join lateral unnest(tsvector_to_array(h.vector)) l
    where l = any(v_lexemes)
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
       where f.agent_id = roster_scope_agent()
         and f.recorded_at < sd.recorded_at
         and (f.audience = 'agent' or (f.person_id = roster_scope_person() and roster_scope_audience() = 'private'))
         and f.trust in ('candidate', 'active', 'verified')
         and f.superseded_at is null
         and (f.valid_to is null or f.valid_to > now())
       order by f.agent_id desc, f.recorded_at desc, f.id desc
       limit 1)
      union all
      (select f.id from facts f
       where f.agent_id = roster_scope_agent()
         and f.recorded_at > sd.recorded_at
         and (f.audience = 'agent' or (f.person_id = roster_scope_person() and roster_scope_audience() = 'private'))
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
  select c.id, (c.own + c.near)::real, c.own::real
  from combined c
  join facts f on f.id = c.id
  order by c.own + c.near desc, f.recorded_at desc, c.id
  limit v_limit;
end
$$;
revoke all on function roster_search_ranked(text, integer, real) from public;
grant execute on function roster_search_ranked(text, integer, real) to roster_app;
