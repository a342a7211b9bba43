import type { InstallationKey } from '@roster/config';
import type { ScopedTransaction } from '@roster/db';
import type { AuditLog } from './audit.js';
import { RejectedStatementError, TombstonedError } from './errors.js';
import { tombstoneMatcher, type TombstoneRow } from './forget.js';
import type { Provenance } from './types.js';

/** What `admit` reads, as one SQL expression (jsonb): the live tombstones and the rejected facts of these words ($hash). */
export const admissionExpression = (hash: string) => `jsonb_build_object(
    'tombstones', coalesce((select jsonb_agg(jsonb_build_object('id', t.id, 'person_id', t.person_id, 'content_hash', t.content_hash, 'minhash', t.minhash,
      'hash_kind', t.hash_kind, 'source_message_ids', t.source_message_ids)) from tombstones t where t.lifted_at is null), '[]'::jsonb),
    'rejected', coalesce((select jsonb_agg(f.source_message_ids) from facts f where f.trust = 'rejected' and f.content_hash = ${hash}), '[]'::jsonb))`;

export interface Admission {
  tombstones: Array<TombstoneRow & { id: string; person_id: string | null; source_message_ids: string[] }>;
  rejected: string[][];
}

/**
 * Refuse what a tombstone or a rejection covers, or lift the tombstone when
 * the same person says it again, explicitly, in a new message. `read` is
 * what `admissionExpression` read in this transaction, else it is read here.
 * Returns how many tombstones it lifted, each with its audit event.
 */
export async function admit(
  { key, audit }: { key: InstallationKey; audit: AuditLog },
  tx: ScopedTransaction,
  content: string,
  hash: string,
  provenance: Provenance,
  read?: Admission,
): Promise<{ lifted: number }> {
  const scope = tx.scope;
  const matches = tombstoneMatcher(key, content);
  const admission = read ?? (await tx.query<{ admission: Admission }>(`select ${admissionExpression('$1')} as admission`, [hash])).rows[0]!.admission;
  const sources = provenance.sourceMessageIds ?? [];
  let lifted = 0;
  for (const tombstone of admission.tombstones) {
    if (!matches(tombstone)) continue;
    const liftable =
      provenance.explicit === true &&
      provenance.actor.kind === 'person' &&
      scope.personId !== null &&
      tombstone.person_id === scope.personId &&
      sources.length > 0 &&
      sources.every((id) => !tombstone.source_message_ids.includes(id));
    if (!liftable) throw new TombstonedError();
    await tx.query('update tombstones set lifted_at = now(), lifted_by_message_id = $2 where id = $1', [tombstone.id, sources[0]]);
    await audit.append(tx, {
      agentId: scope.agentId,
      personId: scope.personId,
      actor: provenance.actor,
      action: 'tombstone-lift',
      targetKind: 'tombstone',
      targetId: tombstone.id,
      detail: { message_id: sources[0] },
    });
    lifted += 1;
  }
  for (const ids of admission.rejected) {
    const sameSources = sources.length === 0 || sources.some((id) => ids.includes(id));
    const restatedByPerson = provenance.actor.kind === 'person' && provenance.explicit === true;
    if (sameSources && !restatedByPerson) throw new RejectedStatementError();
  }
  return { lifted };
}
