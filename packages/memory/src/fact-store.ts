// Reading one fact by id and writing a new row: the statements every memory operation shares.
import { isUuid, type ScopedTransaction } from '@roster/db';
import { FactNotFoundError } from './errors.js';
import { factColumns, toFact, type FactRow } from './rows.js';
import type { Fact, Provenance, Trust } from './types.js';

export async function loadFact(tx: ScopedTransaction, factId: string, forUpdate = false): Promise<Fact> {
  if (!isUuid(factId)) throw new FactNotFoundError(String(factId));
  const { rows } = await tx.query<FactRow>(`select ${factColumns} from facts f where f.id = $1${forUpdate ? ' for update' : ''}`, [factId]);
  const row = rows[0];
  if (row === undefined) throw new FactNotFoundError(factId);
  return toFact(row);
}

export async function insertFact(
  tx: ScopedTransaction,
  input: { content: string; hash: string; category: string; audience: 'private' | 'agent'; trust: Trust; provenance: Provenance },
): Promise<Fact> {
  const { scope } = tx;
  const personId = input.audience === 'agent' && scope.personId === null ? null : scope.personId;
  const { rows } = await tx.query<FactRow>(
    `insert into facts as f (agent_id, person_id, audience, content, content_hash, category, trust,
       source_message_ids, actor_kind, actor_id, channel, tool, untrusted_input)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
     returning ${factColumns}`,
    [
      scope.agentId,
      personId,
      input.audience,
      input.content,
      input.hash,
      input.category,
      input.trust,
      input.provenance.sourceMessageIds ?? [],
      input.provenance.actor.kind,
      input.provenance.actor.id ?? null,
      input.provenance.channel ?? null,
      input.provenance.tool ?? null,
      input.provenance.untrusted === true,
    ],
  );
  return toFact(rows[0]!);
}
