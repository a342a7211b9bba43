import { toSql } from 'pgvector';
import { vectorExpression } from './embeddings.js';
import { factRowFromJson, type FactRow } from './rows.js';

/**
 * Everything one search reads, in one statement: the full-text arm and the
 * weight of each query word in the scope (roster_search_words), the vector
 * arm, and the facts either arm found with their words and stored vectors,
 * all but the vector arm in roster_search, whose plan the connection keeps.
 * It runs as the scope's role like every other read, so row-level security
 * decides what each part sees; it is one item of a FROM list, so that a
 * caller can read other things beside it in the same statement (the core
 * reads a turn's lessons and history with it).
 */
export interface SearchStatementInput {
  /** The full-text arm's candidates and neighbours' share; null leaves the arm out. */
  fullText: { candidates: number; neighbours: number } | null;
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
 * The search as one item of a FROM list (roster_search's one row, of the
 * columns `search` and `vectors`), its placeholders numbered from `first`,
 * and its parameters in that order.
 */
export function searchSource(input: SearchStatementInput, first: number): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const p = (value: unknown) => {
    params.push(value);
    return `$${first + params.length - 1}`;
  };
  // Everything but the vector arm runs in roster_search (0040), which keeps its plan for the connection; the arm is
  // written here, as its distance reads the column as the model's vector(n), the expression its HNSW index is built on.
  let vector = 'null::json';
  if (input.vector !== null) {
    const dimensions = input.vector.values.length;
    const expression = vectorExpression(dimensions);
    const query = `${p(toSql(input.vector.values))}::vector(${dimensions})`;
    // A small scope is scanned exactly rather than asked of the graph: ordered by the distance plus
    // nothing, which no index offers, so the planner sorts the scope's rows (found by their own index).
    let arm =
      `select fe.fact_id as id, (${expression} <=> ${query})::float8 as distance from fact_embeddings fe ` +
      `where fe.model = ${p(input.vector.model)} and fe.searchable ` +
      `order by ${input.vector.exact ? `(${expression} <=> ${query}) + 0` : `${expression} <=> ${query}`} limit ${p(input.vector.walk ?? input.vector.candidates)}`;
    // The graph's walk may return its neighbours a little out of order (relaxed_order): the nearest of them are kept,
    // sorted (`+ 0`: the order the walk gives would let the limit stop it early).
    if (input.vector.walk !== undefined && input.vector.walk > input.vector.candidates) {
      arm = `select g.id, g.distance from (${arm}) g order by g.distance + 0 limit ${p(input.vector.candidates)}`;
    }
    // In the arm's order: roster_search keeps it.
    vector = `(select json_agg(json_build_array(v.id, v.distance)) from (${arm}) v)`;
  }
  const fullText = input.fullText;
  const sql =
    `roster_search(${p(input.text)}, ${p(input.knownFacts)}::bigint, ${p(fullText !== null)}::boolean, ` +
    `${p(fullText?.candidates ?? null)}::integer, ${p(fullText?.neighbours ?? null)}::real, ${vector}, ${p(input.vectorsOf)}::text)`;
  return { sql, params };
}

interface SearchJson {
  fullText: Array<[string, number, number, number]>;
  vector: Array<[string, number]>;
  facts: Array<Record<string, unknown>>;
  terms: Array<[string, number, number]>;
}

/** What roster_search returned: its json, and the facts' stored vectors by id. */
export interface SearchRow {
  search: unknown;
  vectors: unknown;
}

const jsonOf = (value: unknown): unknown => (typeof value === 'string' ? JSON.parse(value) : value);

/** The statement's row, as the arms and rows search ranks. */
export function parseSearchSource(row: SearchRow): SearchSource {
  const json = jsonOf(row.search) as SearchJson;
  const stored = (jsonOf(row.vectors) ?? {}) as Record<string, string>;
  const fullText = json.fullText.map(([id, score, own], index) => ({ id, rank: index + 1, value: Number(score), own: Number(own) }));
  // relaxed_order may return neighbours slightly out of order.
  const vector = json.vector
    .map(([id, distance]) => ({ id, distance: Number(distance) }))
    .sort((a, b) => a.distance - b.distance)
    .map((row, index) => ({ id: row.id, rank: index + 1, value: row.distance, own: 0 }));
  const vectors = new Map<string, Float32Array>();
  const facts = json.facts.map((fields) => {
    const fact = factRowFromJson(fields) as FactRow & { lexemes: string[] };
    const encoded = stored[fact.id];
    if (encoded !== undefined) vectors.set(fact.id, vectorFromBase64(encoded));
    return fact;
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
