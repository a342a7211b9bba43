import { toSql } from 'pgvector';
import { vectorExpression } from './embeddings.js';
import { factColumns, factRowFromJson, type FactRow } from './rows.js';

/**
 * Everything one search reads, in one statement: the full-text arm and the
 * weight of each query word in the scope (roster_search_words), the vector
 * arm, and the facts either arm found with their words and stored vectors.
 * It runs as the scope's role like every other read, so row-level security
 * decides what each part sees; it is one
 * expression, so that a caller can read other things beside it in the same
 * statement (the core reads a turn's lessons and history with it).
 */
export interface SearchStatementInput {
  /** The query as the person wrote it; null leaves the full-text arm out. */
  fullText: { text: string; candidates: number; neighbours: number; knownFacts: number | null } | null;
  /**
   * The query's vector; null leaves the vector arm out. `walk`: through the
   * graph, how many neighbours are asked of it before the nearest
   * `candidates` of them are kept (fewer would stop its scan too early).
   */
  vector: { values: number[]; model: string; candidates: number; exact: boolean; walk?: number } | null;
  /** The query for the weights of its words (always the full text, even when that arm is left out). */
  text: string;
  knownFacts: number | null;
  /** The model whose stored vectors come with the facts (for diversity), or null for none. */
  vectorsOf: string | null;
}

/** One arm's hit as read: its id, its rank (1 is best), its score or distance and, for full text, its own score. */
interface ArmHit {
  id: string;
  rank: number;
  value: number;
  /** Full text: the fact's own BM25 score, without what it borrowed from a neighbour. */
  own: number;
}

/** What the statement returns, parsed. */
export interface SearchSource {
  fullText: ArmHit[];
  /** The scope's fact count the full-text arm used (its N), when it ran. */
  scopeFacts: number | null;
  vector: ArmHit[];
  facts: Array<FactRow & { lexemes: string[] }>;
  vectors: Map<string, Float32Array>;
  terms: Array<{ lexeme: string; df: number; scopeFacts: number }>;
}

/**
 * The search as one SQL expression (a scalar subquery returning json), its
 * placeholders numbered from `first`, and its parameters in that order.
 */
export function searchExpression(input: SearchStatementInput, first: number): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const p = (value: unknown) => {
    params.push(value);
    return `$${first + params.length - 1}`;
  };
  const text = p(input.text);
  const known = p(input.knownFacts);
  // The full-text arm's hits and the weight of each query word come from one function (0033); with
  // that arm left out, the words' counts alone (0029), read only when the vector arm found something.
  let words = 'select null::uuid as id, null::real as score, null::real as own, null::integer as rank, null::text as lexeme, null::bigint as df, null::bigint as scope_facts where false';
  let terms = `select t.lexeme, t.df, t.scope_facts
       from (select 1 where exists (select 1 from found)) g cross join lateral roster_query_terms(${text}, ${known}::bigint) t`;
  if (input.fullText !== null) {
    words =
      `select w.id, w.score, w.own, w.rank, w.lexeme, w.df, w.scope_facts ` +
      `from roster_search_words(${text}, ${p(input.fullText.candidates)}::integer, ${p(input.fullText.neighbours)}::real, ${known}::bigint) w`;
    terms = 'select w.lexeme, w.df, w.scope_facts from words w where w.lexeme is not null';
  }
  let vector = 'select null::uuid as id, null::float8 as distance where false';
  if (input.vector !== null) {
    const dimensions = input.vector.values.length;
    const expression = vectorExpression(dimensions);
    const query = `${p(toSql(input.vector.values))}::vector(${dimensions})`;
    // A small scope is scanned exactly rather than asked of the graph: ordered by the distance plus
    // nothing, which no index offers, so the planner sorts the scope's rows (found by their own index).
    vector =
      `select fe.fact_id as id, (${expression} <=> ${query})::float8 as distance from fact_embeddings fe ` +
      `where fe.model = ${p(input.vector.model)} and fe.searchable ` +
      `order by ${input.vector.exact ? `(${expression} <=> ${query}) + 0` : `${expression} <=> ${query}`} limit ${p(input.vector.walk ?? input.vector.candidates)}`;
    // The graph's walk may return its neighbours a little out of order (relaxed_order): the nearest of them are kept,
    // sorted (`+ 0`: the order the walk gives would let the limit stop it early).
    if (input.vector.walk !== undefined && input.vector.walk > input.vector.candidates) {
      vector = `select g.id, g.distance from (${vector}) g order by g.distance + 0 limit ${p(input.vector.candidates)}`;
    }
  }
  // In pgvector's binary form (base64 in the json): no decimal to print and parse per number.
  const stored =
    input.vectorsOf === null ? 'null::text' : `(select encode(vector_send(e.embedding), 'base64') from fact_embeddings e where e.model = ${p(input.vectorsOf)} and e.fact_id = f.id)`;
  const sql = `(with words as materialized (${words}),
     ft as materialized (select w.id, w.score, w.own, w.scope_facts, w.rank from words w where w.id is not null),
     vec as materialized (${vector}),
     ids as (select id from ft union select id from vec),
     found as materialized (
       select ${factColumns}, tsvector_to_array(f.search_vector) as lexemes, ${stored} as embedding
       from facts f where f.id = any (array(select id from ids))
     ),
     terms as (${terms})
     select json_build_object(
       'fullText', coalesce((select json_agg(json_build_array(ft.id, ft.score, ft.own, ft.scope_facts) order by ft.rank) from ft), '[]'::json),
       'vector', coalesce((select json_agg(json_build_array(vec.id, vec.distance)) from vec), '[]'::json),
       'facts', coalesce((select json_agg(found) from found), '[]'::json),
       'terms', coalesce((select json_agg(json_build_array(terms.lexeme, terms.df, terms.scope_facts)) from terms), '[]'::json)
     ))`;
  return { sql, params };
}

interface SearchJson {
  fullText: Array<[string, number, number, number]>;
  vector: Array<[string, number]>;
  facts: Array<Record<string, unknown>>;
  terms: Array<[string, number, number]>;
}

/** The statement's value, as the arms and rows search ranks. */
export function parseSearchSource(value: unknown): SearchSource {
  const json = (typeof value === 'string' ? JSON.parse(value) : value) as SearchJson;
  const fullText = json.fullText.map(([id, score, own], index) => ({ id, rank: index + 1, value: Number(score), own: Number(own) }));
  // relaxed_order may return neighbours slightly out of order.
  const vector = json.vector
    .map(([id, distance]) => ({ id, distance: Number(distance) }))
    .sort((a, b) => a.distance - b.distance)
    .map((row, index) => ({ id: row.id, rank: index + 1, value: row.distance, own: 0 }));
  const vectors = new Map<string, Float32Array>();
  const facts = json.facts.map((row) => {
    const fact = factRowFromJson(row) as unknown as Record<string, unknown>;
    if (typeof fact.embedding === 'string') vectors.set(fact.id as string, vectorFromBase64(fact.embedding));
    delete fact.embedding;
    return fact as unknown as FactRow & { lexemes: string[] };
  });
  return {
    fullText,
    scopeFacts: json.fullText[0] === undefined ? null : Number(json.fullText[0][3]),
    vector,
    facts,
    vectors,
    terms: json.terms.map(([lexeme, df, scopeFacts]) => ({ lexeme, df: Number(df), scopeFacts: Number(scopeFacts) })),
  };
}

/** pgvector's binary form (vector_send): the dimensions (uint16), two unused bytes, then each value as a big-endian float4. */
function vectorFromBase64(encoded: string): Float32Array {
  const bytes = Buffer.from(encoded, 'base64');
  const dimensions = bytes.readUInt16BE(0);
  if (bytes.length !== 4 + dimensions * 4) throw new Error(`a stored vector of ${dimensions} dimensions came back as ${bytes.length} bytes`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const values = new Float32Array(dimensions);
  for (let index = 0; index < dimensions; index += 1) values[index] = view.getFloat32(4 + index * 4);
  return values;
}
