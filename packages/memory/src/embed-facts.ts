import type { Database } from '@roster/db';
import type { Embedder } from '@roster/contracts';
import { ensureEmbeddingModel, writeEmbedding } from './embeddings.js';

export interface EmbedFactsOptions {
  /** One fact only. */
  factId?: string;
  /** One agent's facts only. */
  agentId?: string;
  /** Re-embed every fact (after a model change), not only those without a vector of this model. */
  all?: boolean;
  /** Called after each batch is committed. */
  onProgress?: (progress: { embedded: number; total: number }) => Promise<void>;
}

export interface EmbedFactsReport {
  embedded: number;
  /** Facts forgotten (or otherwise changed) while their vectors were computed: nothing was written for them. */
  skipped: number;
  model: string;
}

const batchSize = 64;

/**
 * Compute the vectors facts lack, in batches: the embedder runs outside any
 * transaction (it may be a remote model), and each batch is written in one
 * transaction that first re-checks every fact, so a fact forgotten while its
 * vector was computed never gets one.
 */
export async function embedFacts(database: Database, embedder: Embedder, options: EmbedFactsOptions = {}): Promise<EmbedFactsReport> {
  const rows = await database.adminScope('embed: facts that need a vector', async (tx) => {
    const { rows } = await tx.query<{ id: string; agent_id: string; person_id: string | null; audience: 'private' | 'agent'; content: string }>(
      `select f.id, f.agent_id, f.person_id, f.audience, f.content from facts f
       where f.trust <> 'forgotten' and f.content <> ''
         and ($1::uuid is null or f.id = $1) and ($4::uuid is null or f.agent_id = $4)
         and ($2 or not exists (select 1 from fact_embeddings e where e.fact_id = f.id and e.model = $3))
       order by f.recorded_at`,
      [options.factId ?? null, options.all === true, embedder.model, options.agentId ?? null],
    );
    return rows;
  });
  let embedded = 0;
  let skipped = 0;
  for (let start = 0; start < rows.length; start += batchSize) {
    const slice = rows.slice(start, start + batchSize);
    const vectors = await embedder.embed(slice.map((row) => row.content));
    if (embedder.dimensions > 0) await ensureEmbeddingModel(database, embedder.model, embedder.dimensions);
    await database.adminScope('embed: write vectors', async (tx) => {
      for (const [index, row] of slice.entries()) {
        const written = await writeEmbedding(tx, { id: row.id, agentId: row.agent_id, personId: row.person_id, audience: row.audience, content: row.content }, embedder.model, vectors[index]!);
        if (written) embedded += 1;
        else skipped += 1;
      }
    });
    await options.onProgress?.({ embedded, total: rows.length });
  }
  return { embedded, skipped, model: embedder.model };
}
