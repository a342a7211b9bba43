/**
 * Loading many facts fast, for benchmarks only. `memory.remember` is one
 * scoped transaction with tombstone checks and an audit event per fact: right
 * for the product, far too slow for 100,000 rows. Here rows go in as owner
 * (`adminScope`), a batch per statement, through `unnest` of arrays.
 */
import { randomUUID } from 'node:crypto';
import type { Database, Scope } from '@roster/db';
import type { Embedder } from '@roster/contracts';
import { contentHash } from '@roster/memory';
import { toSql } from 'pgvector';

/** Agents, each with one person, and the private scope of each pair. */
export async function createScopes(database: Database, count: number, prefix = 'bench'): Promise<Scope[]> {
  return database.adminScope('bench: create agents and people', async (tx) => {
    const scopes: Scope[] = [];
    for (let index = 0; index < count; index += 1) {
      const agent = await tx.query<{ id: string }>(`insert into agents (name, job) values ($1, 'benchmark agent') returning id`, [
        `${prefix}-agent-${index}`,
      ]);
      const person = await tx.query<{ id: string }>(`insert into people (name, role) values ($1, 'member') returning id`, [
        `${prefix} person ${index}`,
      ]);
      scopes.push({ agentId: agent.rows[0]!.id, personId: person.rows[0]!.id, audience: 'private' });
    }
    return scopes;
  });
}

export interface FactToLoad {
  scope: Scope;
  content: string;
}

export interface BulkLoadOptions {
  /** Rows per INSERT statement (default 1,000). */
  batchSize?: number;
  /** Called after each batch with the rows loaded so far. */
  onProgress?: (loaded: number) => void;
}

/**
 * Insert facts (trust `active`; audience `private`, or `agent` when the scope
 * has no person: an agent-wide fact every scope of the agent reads) and their vectors of the
 * embedder's model, a batch per transaction. Returns the fact ids in input
 * order. Does not register the model: call `ensureEmbeddingModel` afterwards,
 * so that the HNSW index is built once over all rows instead of row by row.
 */
export async function bulkLoadFacts(database: Database, embedder: Embedder, facts: readonly FactToLoad[], options: BulkLoadOptions = {}): Promise<string[]> {
  const batchSize = options.batchSize ?? 1000;
  const ids: string[] = [];
  for (let start = 0; start < facts.length; start += batchSize) {
    const batch = facts.slice(start, start + batchSize);
    const batchIds = batch.map(() => randomUUID());
    const vectors = await embedder.embed(batch.map((fact) => fact.content));
    await database.adminScope('bench: bulk load facts', async (tx) => {
      await tx.query(
        `insert into facts (id, agent_id, person_id, audience, content, content_hash, category, trust)
         select id, agent_id, person_id, case when person_id is null then 'agent' else 'private' end, content, content_hash, 'general', 'active'
         from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[]) as t(id, agent_id, person_id, content, content_hash)`,
        [batchIds, batch.map((fact) => fact.scope.agentId), batch.map((fact) => fact.scope.personId), batch.map((fact) => fact.content), batch.map((fact) => contentHash(fact.content))],
      );
      await tx.query(
        `insert into fact_embeddings (fact_id, model, agent_id, person_id, audience, embedding)
         select fact_id, $1, agent_id, person_id, case when person_id is null then 'agent' else 'private' end, embedding::vector
         from unnest($2::uuid[], $3::uuid[], $4::uuid[], $5::text[]) as t(fact_id, agent_id, person_id, embedding)`,
        [embedder.model, batchIds, batch.map((fact) => fact.scope.agentId), batch.map((fact) => fact.scope.personId), vectors.map(storedPrecision)],
      );
    });
    ids.push(...batchIds);
    options.onProgress?.(ids.length);
  }
  return ids;
}

/** pgvector's text form of `vector`, cut to the seven significant digits a float4 column keeps anyway: a smaller statement. */
function storedPrecision(vector: readonly number[]): string {
  return toSql(vector.map((value) => Number(value.toPrecision(7)))) as string;
}
