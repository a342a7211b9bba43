import { createHash } from 'node:crypto';
import type { Database, Transaction } from '@roster/db';
import { RosterError } from '@roster/errors';
import { toSql } from 'pgvector';
import type { Embedder } from '@roster/contracts';

/** pgvector indexes `vector` columns of up to 2,000 dimensions with HNSW. */
const maxIndexedDimensions = 2000;

/** A model's vectors are compared through this expression, so that its partial index applies. */
export function vectorExpression(dimensions: number, column = 'fe.embedding'): string {
  assertDimensions(dimensions);
  return `(${column}::vector(${dimensions}))`;
}

function assertDimensions(dimensions: number): void {
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > 16000) {
    throw new RosterError('embedder_dimensions_invalid', `An embedding model must have 1 to 16,000 dimensions, got ${dimensions}.`);
  }
}

/**
 * Make sure the model is registered and has its own HNSW index (a partial
 * index on `model = …`, over the column cast to its dimension). A new model
 * needs no migration. Idempotent; the owner's role creates the index.
 */
export async function ensureEmbeddingModel(database: Database, model: string, dimensions: number): Promise<void> {
  assertDimensions(dimensions);
  const indexName = `fact_embeddings_hnsw_${createHash('sha256').update(model).digest('hex').slice(0, 16)}`;
  await database.ownerScope('memory: register an embedding model and its index', async (tx) => {
    await tx.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [`roster.embedding_model:${model}`]);
    const existing = await tx.query<{ dimensions: number }>('select dimensions from embedding_models where model = $1', [model]);
    if (existing.rows[0] !== undefined) {
      if (existing.rows[0].dimensions !== dimensions) {
        throw new RosterError(
          'embedder_dimensions_changed',
          `The embedding model ${model} was registered with ${existing.rows[0].dimensions} dimensions and now answers ${dimensions}. Give the new model another name, then re-embed.`,
        );
      }
      return;
    }
    if (dimensions <= maxIndexedDimensions) {
      // A denser graph than pgvector's default (m 16, ef_construction 64): measured on
      // hashing vectors it finds 0.12 more of the true top 10 (docs/benchmarks.md).
      // Building it is memory-bound; give it room for this transaction only.
      await tx.query(`select set_config('maintenance_work_mem', '256MB', true)`);
      await tx.query(
        `create index if not exists ${indexName} on fact_embeddings using hnsw (${vectorExpression(dimensions, 'embedding')} vector_cosine_ops)
         with (m = 32, ef_construction = 128) where model = ${quoteLiteral(model)} and searchable`,
      );
    }
    await tx.query('insert into embedding_models (model, dimensions, index_name) values ($1, $2, $3)', [model, dimensions, indexName]);
  });
}

function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/**
 * Write (or replace) one fact's vector, in the caller's transaction, if the
 * fact still holds the words the vector was made from. The fact's row is
 * locked first, so a forget that runs meanwhile either finishes before
 * (and nothing is written) or waits and then deletes the vector. Returns
 * whether it wrote.
 */
export async function writeEmbedding(
  tx: Transaction,
  fact: { id: string; agentId: string; personId: string | null; audience: 'private' | 'agent'; content: string },
  model: string,
  vector: readonly number[],
): Promise<boolean> {
  const current = await tx.query<{ content: string; trust: string }>('select content, trust from facts where id = $1 for share', [fact.id]);
  const row = current.rows[0];
  if (row === undefined || row.trust === 'forgotten' || row.content === '' || row.content !== fact.content) return false;
  await tx.query(
    `insert into fact_embeddings (fact_id, model, agent_id, person_id, audience, embedding, searchable)
     select $1, $2, $3, $4, $5, $6::vector, (f.trust in ('candidate', 'active', 'verified') and f.valid_to is null and f.superseded_at is null)
     from facts f where f.id = $1
     on conflict (fact_id, model) do update set embedding = excluded.embedding, searchable = excluded.searchable, created_at = now()`,
    [fact.id, model, fact.agentId, fact.personId, fact.audience, toSql(vector)],
  );
  return true;
}

/** Embed one text with a local embedder, for writing in the same transaction. */
export async function embedOne(embedder: Embedder, text: string): Promise<number[]> {
  const [vector] = await embedder.embed([text]);
  if (vector === undefined || vector.length !== embedder.dimensions) {
    throw new RosterError('embedder_bad_response', `The embedder ${embedder.model} returned no vector of ${embedder.dimensions} dimensions.`);
  }
  return vector;
}
