// Reading one fact by id and writing a new row: the statements every memory operation shares.
import { isUuid, type ScopedTransaction, type WriteAlong } from '@roster/db';
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

export interface NewFact {
  content: string;
  hash: string;
  category: string;
  audience: 'private' | 'agent';
  trust: Trust;
  provenance: Provenance;
}

/** Whose a new fact of `audience` is in this scope: the scope's person, or no one for an agent-wide fact said without one. */
export function newFactPerson(tx: ScopedTransaction, audience: NewFact['audience']): string | null {
  return audience === 'agent' && tx.scope.personId === null ? null : tx.scope.personId;
}

const insertColumns = `agent_id, person_id, audience, content, content_hash, category, trust,
       source_message_ids, actor_kind, actor_id, channel, tool, untrusted_input`;

function insertValues(tx: ScopedTransaction, input: NewFact): unknown[] {
  return [
    tx.scope.agentId,
    newFactPerson(tx, input.audience),
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
  ];
}

export async function insertFact(tx: ScopedTransaction, input: NewFact): Promise<Fact> {
  const { rows } = await tx.query<FactRow>(
    `insert into facts as f (${insertColumns})
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
     returning ${factColumns}`,
    insertValues(tx, input),
  );
  return toFact(rows[0]!);
}

/**
 * A new fact (with the id `id`), its vector and its audit events, as the
 * common table expressions `f`, `v` and `e` of one statement, written only
 * where `condition` holds (an SQL condition that may name the statement's
 * other expressions): `events` is the write `AuditLog.link` made after the
 * chain's head, which the transaction read (and locked) before. A vector is
 * stored searchable when the fact's trust is one search reads. `parameter`
 * adds a value to the statement's and names it.
 */
export function factWithVectorExpressions(
  parameter: (value: unknown) => string,
  tx: ScopedTransaction,
  input: NewFact & { id: string },
  vector: { model: string; value: string },
  events: WriteAlong,
  condition: string,
): string {
  const values = [input.id, ...insertValues(tx, input)].map(parameter).join(', ');
  return `f as (
       insert into facts as f (id, ${insertColumns})
       select ${values} where ${condition}
       returning ${factColumns}
     ),
     v as (
       insert into fact_embeddings (fact_id, model, agent_id, person_id, audience, embedding, searchable)
       select f.id, ${parameter(vector.model)}, f.agent_id, f.person_id, f.audience, ${parameter(vector.value)}::vector, f.trust in ('candidate', 'active', 'verified') from f
     ),
     e as (${events.sql(parameter(events.value), `(${condition})`)})`;
}

/** `factWithVectorExpressions`, unconditionally, as a statement of its own: the new fact. */
export async function insertFactWithVector(
  tx: ScopedTransaction,
  input: NewFact & { id: string },
  vector: { model: string; value: string },
  events: WriteAlong,
): Promise<Fact> {
  const params: unknown[] = [];
  const expressions = factWithVectorExpressions((value) => `$${params.push(value)}`, tx, input, vector, events, 'true');
  const { rows } = await tx.query<FactRow>(`with ${expressions} select f.* from f cross join (select count(*) from e) e_rows`, params);
  return toFact(rows[0]!);
}
