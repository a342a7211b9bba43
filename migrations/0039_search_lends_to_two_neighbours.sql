-- A match lends its score to the two facts recorded on each side of it, not one.
--
-- roster_search_words (0037) lent p_neighbour of a seed's score to the fact
-- recorded just before it and to the one just after, in the scope. A fact
-- two turns away from the match is often what a question asks about as
-- well (a reply to a reply); it now borrows too, at p_neighbour² (a quarter
-- at search's default of a half), so that the nearer one still comes first.
-- Everything else is 0037's: the seeds, the words' rows, the order.

create or replace function roster_search_words(p_text text, p_limit integer, p_neighbour real, p_facts bigint default null)
returns table (id uuid, score real, own real, rank integer, lexeme text, df bigint, scope_facts bigint)
language plpgsql
stable
security definer
set search_path = public, pg_temp
-- As 0019: the neighbours are found by walking facts_agent_recorded_idx, not by sorting a scope.
set enable_sort = off
set jit = off
as $$
declare
  v_agent uuid := roster_scope_agent();
  v_person uuid := roster_scope_person();
  v_private boolean := coalesce(roster_scope_audience() = 'private', false);
  v_lexemes text[];
  v_terms tsquery[];
  v_facts bigint := p_facts;
  v_limit integer := least(greatest(p_limit, 1), 1000);
begin
  if v_agent is null then
    return;
  end if;
  v_lexemes := array(select l from unnest(tsvector_to_array(to_tsvector('english', p_text))) l limit 64);
  if cardinality(v_lexemes) = 0 then
    return;
  end if;
  v_terms := array(select roster_quote_lexeme(l)::tsquery from unnest(v_lexemes) l);
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
  with matches as materialized (
    -- Each word's facts in the scope, from the full-text index: a fact holding two words comes twice.
    select f.id, f.recorded_at, length(f.search_vector) as dl, q.l as lexeme
    from unnest(v_lexemes, v_terms) as q(l, t)
    cross join lateral (
      select f.id, f.recorded_at, f.search_vector
      from facts f
      where f.search_vector @@ q.t
        and f.agent_id = v_agent
        and (f.audience = 'agent' or (v_private and f.person_id = v_person))
        and f.trust in ('candidate', 'active', 'verified')
        and f.superseded_at is null
        and (f.valid_to is null or f.valid_to > now())
    ) f
  ),
  hits as materialized (
    select m.id, min(m.dl) as dl from matches m group by m.id
  ),
  frequencies as materialized (
    select m.lexeme, count(*)::float8 as df from matches m group by m.lexeme
  ),
  stats as materialized (
    select greatest(v_facts, count(*))::float8 as n, greatest(avg(h.dl)::float8, 1) as avgdl from hits h
  ),
  idf as materialized (
    -- Each word's weight once, not once per fact holding it.
    select fr.lexeme, ln(1 + (s.n - fr.df + 0.5) / (fr.df + 0.5)) as idf from frequencies fr cross join stats s
  ),
  scored as materialized (
    -- BM25 with k1 = 1.2, b = 0.75, a word counted once per fact, as 0019.
    select m.id, m.recorded_at,
           sum(w.idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * m.dl / s.avgdl)))::float8 as score
    from matches m
    join idf w on w.lexeme = m.lexeme
    cross join stats s
    group by m.id, m.recorded_at
  ),
  seeds as materialized (
    -- The strongest matches, in the order the results take (the id last, so that a tie is settled the same way).
    select sc.id, sc.recorded_at, sc.score from scored sc order by sc.score desc, sc.recorded_at desc, sc.id limit v_limit
  ),
  near as (
    -- Two facts on each side of a seed: the nearest borrows p_neighbour of its score, the next p_neighbour².
    select n.id, n.recorded_at, (case when n.step = 1 then p_neighbour else p_neighbour * p_neighbour end) * sd.score as score
    from seeds sd
    cross join lateral (
      (select b.id, b.recorded_at, row_number() over (order by b.recorded_at desc, b.id desc) as step
       from (select f.id, f.recorded_at from facts f
             where f.agent_id = v_agent
               and f.recorded_at < sd.recorded_at
               and (f.audience = 'agent' or (v_private and f.person_id = v_person))
               and f.trust in ('candidate', 'active', 'verified')
               and f.superseded_at is null
               and (f.valid_to is null or f.valid_to > now())
             order by f.agent_id desc, f.recorded_at desc, f.id desc
             limit 2) b)
      union all
      (select a.id, a.recorded_at, row_number() over (order by a.recorded_at, a.id) as step
       from (select f.id, f.recorded_at from facts f
             where f.agent_id = v_agent
               and f.recorded_at > sd.recorded_at
               and (f.audience = 'agent' or (v_private and f.person_id = v_person))
               and f.trust in ('candidate', 'active', 'verified')
               and f.superseded_at is null
               and (f.valid_to is null or f.valid_to > now())
             order by f.agent_id, f.recorded_at, f.id
             limit 2) a)
    ) n
    where p_neighbour > 0
  ),
  nearest as (
    select nr.id, max(nr.recorded_at) as recorded_at, max(nr.score) as near from near nr group by nr.id
  ),
  combined as (
    -- Only a seed or a neighbour can be among the first v_limit: any other match scores no more than the
    -- weakest seed, which comes before it in the same order.
    select sd.id, sd.recorded_at, sd.score as own, coalesce(n.near, 0) as near
    from seeds sd left join nearest n on n.id = sd.id
    union all
    select n.id, n.recorded_at, coalesce(sc.score, 0), n.near
    from nearest n left join scored sc on sc.id = n.id
    where not exists (select 1 from seeds sd where sd.id = n.id)
  ),
  ranked as (
    select c.id, (c.own + c.near)::real as score, c.own::real as own,
           row_number() over (order by c.own + c.near desc, c.recorded_at desc, c.id)::integer as rank
    from combined c
  )
  (select r.id, r.score, r.own, r.rank, null::text, null::bigint, v_facts
   from ranked r
   where r.rank <= v_limit)
  union all
  -- Then each query word and the scope's facts holding it (0 for a word none holds).
  (select null::uuid, null::real, null::real, null::integer, q.l, coalesce(fr.df, 0)::bigint, v_facts
   from unnest(v_lexemes) as q(l)
   left join frequencies fr on fr.lexeme = q.l);
end
$$;
