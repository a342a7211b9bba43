-- The full-text arm found word by word, and each word's count in the scope
-- with it.
--
-- roster_search_ranked (0024) read every fact holding any query word, then
-- tested each of them against each word (a fact and a word at a time), and
-- read every hit's row again at the end for its time; the words' counts
-- (roster_query_terms, 0029) were a second pass over the same index. With
-- 10,000 facts and a question of nine words in 950 of them, that was about
-- 13 ms and 2.5 ms on the embedded database. roster_search_words asks the
-- index once per word (which facts hold this word), so each hit comes with
-- the word it holds, counts each word from those hits, and carries each
-- hit's time through to the order at the end. The scores, the neighbours and
-- the order are the same as roster_search_ranked's.
--
-- It returns the hits (id, score, own score, rank) and one row per query
-- word (lexeme, the scope's facts holding it), each row with the scope's N. Like roster_search_ranked it runs as the owner and
-- applies the scope rule itself, to every row it reads.

create function roster_search_words(p_text text, p_limit integer, p_neighbour real, p_facts bigint default null)
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
  scored as materialized (
    -- BM25 with k1 = 1.2, b = 0.75, a word counted once per fact, as 0019.
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
    select n.id, n.recorded_at, p_neighbour * sd.score as score
    from seeds sd
    cross join lateral (
      (select f.id, f.recorded_at from facts f
       where f.agent_id = v_agent
         and f.recorded_at < sd.recorded_at
         and (f.audience = 'agent' or (v_private and f.person_id = v_person))
         and f.trust in ('candidate', 'active', 'verified')
         and f.superseded_at is null
         and (f.valid_to is null or f.valid_to > now())
       order by f.agent_id desc, f.recorded_at desc, f.id desc
       limit 1)
      union all
      (select f.id, f.recorded_at from facts f
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
    select c.id, max(c.recorded_at) as recorded_at, max(c.own) as own, max(c.near) as near
    from (
      select sc.id, sc.recorded_at, sc.score as own, 0::float8 as near from scored sc
      union all
      select nr.id, nr.recorded_at, 0::float8, nr.score from near nr
    ) c
    group by c.id
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
revoke all on function roster_search_words(text, integer, real, bigint) from public;
grant execute on function roster_search_words(text, integer, real, bigint) to roster_app;

-- Search reads the full-text arm through roster_search_words only.
drop function roster_search_ranked(text, integer, real, bigint);
