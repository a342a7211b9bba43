-- A search's statement planned once per connection, not once per search.
--
-- memory.search read everything in one statement built in search-statement.ts:
-- the full-text arm (roster_search_words), the vector arm, the facts either
-- arm found with their words and stored vectors, and the query's words. Postgres
-- planned that statement, with the row-level security of facts and
-- fact_embeddings, on every search: about 0.6 ms of a 9 ms search on the
-- embedded database, where the facts' part alone took 0.4 ms.
--
-- roster_search runs the same statement from a PL/pgSQL function, which keeps
-- its plan for the connection. Only the vector arm is still written by the
-- caller and planned each time: its distance must read the column as the
-- model's vector(n), the expression its HNSW index is built on, and it comes
-- in as json, [[fact id, distance], ...] in the arm's order, or null when the
-- search has no vector arm. p_full_text false leaves the full-text arm out; the
-- query's words are then counted by roster_query_terms, as before, and only
-- when the vector arm found something. p_vectors_of is the model whose stored
-- vectors come with the facts (for diversity), or null for none.
--
-- It is security invoker: it runs as the scope's role, and row-level security
-- decides what each part reads, as it did in the statement it replaces. It
-- returns one row: `search`, the json that statement returned without the
-- facts' stored vectors, and `vectors`, those vectors by fact id, each in
-- pgvector's binary form in base64 (null without p_vectors_of). Two values,
-- not one: a client makes a string of each, and a string of more than
-- 128 KiB (the whole json of a search with 70 facts of 256 dimensions came to
-- about 165 KB) costs node's V8 thirty times as much a byte to make.

create function roster_search(
  p_text text,
  p_facts bigint,
  p_full_text boolean,
  p_candidates integer,
  p_neighbour real,
  p_vector json,
  p_vectors_of text
)
returns table (search json, vectors json)
language plpgsql
stable
set search_path = public, pg_temp
as $$
#variable_conflict use_column
begin
  return query
    with words as materialized (
      select w.id, w.score, w.own, w.rank, w.lexeme, w.df, w.scope_facts
      from roster_search_words(p_text, p_candidates, p_neighbour, p_facts) w
      where p_full_text
    ),
    ft as materialized (select w.id, w.score, w.own, w.scope_facts, w.rank from words w where w.id is not null),
    vec as materialized (
      select (v.hit ->> 0)::uuid as id, (v.hit ->> 1)::float8 as distance, v.place
      from json_array_elements(coalesce(p_vector, '[]'::json)) with ordinality as v(hit, place)
    ),
    ids as (select ft.id from ft union select vec.id from vec),
    matched as materialized (
      select f.id, f.agent_id, f.person_id, f.audience, f.content, f.category, f.trust, f.valid_from, f.valid_to,
             f.recorded_at, f.superseded_at, f.superseded_by, f.source_message_ids, f.actor_kind, f.actor_id, f.channel, f.tool,
             f.untrusted_input, f.uses, f.last_used_at, f.restates, f.restated_as,
             tsvector_to_array(f.search_vector) as lexemes
      from facts f
      where f.id = any (array(select ids.id from ids))
    ),
    terms as (
      select w.lexeme, w.df, w.scope_facts from words w where w.lexeme is not null
      union all
      -- Without the full-text arm, the words' counts alone, read only when the vector arm found something.
      select t.lexeme, t.df, t.scope_facts
      from (select 1 where not p_full_text and exists (select 1 from matched)) g
      cross join lateral roster_query_terms(p_text, p_facts) t
    )
    select json_build_object(
      'fullText', coalesce((select json_agg(json_build_array(ft.id, ft.score, ft.own, ft.scope_facts) order by ft.rank) from ft), '[]'::json),
      'vector', coalesce((select json_agg(json_build_array(vec.id, vec.distance) order by vec.place) from vec), '[]'::json),
      'facts', coalesce((select json_agg(matched) from matched), '[]'::json),
      'terms', coalesce((select json_agg(json_build_array(terms.lexeme, terms.df, terms.scope_facts)) from terms), '[]'::json)
    ),
    (select json_object_agg(e.fact_id, encode(vector_send(e.embedding), 'base64'))
     from fact_embeddings e
     where p_vectors_of is not null and e.model = p_vectors_of and e.fact_id in (select m.id from matched m));
end
$$;
revoke all on function roster_search(text, bigint, boolean, integer, real, json, text) from public;
grant execute on function roster_search(text, bigint, boolean, integer, real, json, text) to roster_app;
