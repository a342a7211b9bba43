// `remember` in one statement when nothing stands in the way of the new fact.
import type { InstallationKey } from '@roster/config';
import type { ScopedTransaction, WriteAlong } from '@roster/db';
import { admissionExpression, type Admission } from './admission.js';
import { factWithVectorExpressions, newFactPerson, type NewFact } from './fact-store.js';
import { factColumns, factRowFromJson, toFact, type FactRow } from './rows.js';
import { keyedMinhash, nearDuplicateThreshold } from './text.js';
import { readableTrust, type Fact } from './types.js';
import { believedNow } from './versions.js';

/** What `remember` reads before it writes: the same words (as believed now, else as they held until a change) and what `admit` reads. */
export interface RememberRead {
  known: (FactRow & { believed_now: boolean }) | null;
  admission: Admission;
}

/** A fact to write in the statement that reads, with its vector and its audit event linked to the head the transaction locked. */
export interface NewFactWrite {
  fact: NewFact & { id: string };
  keyedHash: string;
  vector: { model: string; value: string };
  events: WriteAlong;
}

/**
 * Whether a live tombstone in the scope might refuse these words, as an SQL
 * condition: the rule of `tombstoneMatcher` (the same keyed hash, or MinHash
 * signatures that agree in at least the near-duplicate share of their
 * positions), made wider (any tombstone of another hash kind, any signature
 * of another length). It only decides whether `admit`, in JavaScript, the
 * rule's one judge, has to look.
 */
function mightBeTombstoned(parameter: (value: unknown) => string, key: InstallationKey, content: string, keyedHash: string): string {
  const signature = keyedMinhash(key, content);
  const agreeing = Math.floor(nearDuplicateThreshold * signature.length);
  const probe = parameter(signature.map(String));
  return `exists (
      select 1 from tombstones t
      where t.lifted_at is null
        and (t.hash_kind is distinct from 'hmac-sha256' or t.content_hash = ${parameter(keyedHash)}
          or cardinality(t.minhash) <> ${parameter(signature.length)}
          or (select count(*) from unnest(t.minhash, ${probe}::bigint[]) as s(stored, probe) where s.stored = s.probe) >= ${parameter(agreeing)}))`;
}

/**
 * Read what `remember` needs to decide (the same words and what admits them)
 * and, when `write` is given and nothing is there to decide (no such words,
 * no rejection of them, no tombstone that might cover them), write the fact,
 * its vector and its audit event in the same statement. `fact` is the fact
 * written, or null when the caller decides from `read`.
 */
export async function readOrRemember(
  tx: ScopedTransaction,
  key: InstallationKey,
  input: { hash: string; audience: NewFact['audience'] },
  write: NewFactWrite | null,
): Promise<{ read: RememberRead; fact: Fact | null }> {
  const params: unknown[] = [];
  const parameter = (value: unknown) => `$${params.push(value)}`;
  const hash = parameter(input.hash);
  const read = `r as materialized (
       select (select to_jsonb(k) from (
                 select ${factColumns}, (${believedNow('f')}) as believed_now from facts f
                 where f.content_hash = ${hash} and f.audience = ${parameter(input.audience)}
                   and f.person_id is not distinct from ${parameter(newFactPerson(tx, input.audience))}
                   and f.trust = any(${parameter(readableTrust)}) and f.superseded_at is null
                 order by believed_now desc, f.recorded_at desc limit 1) k) as known,
              ${admissionExpression(hash)} as admission
     )`;
  if (write === null) {
    const { rows } = await tx.query<RememberRead>(`with ${read} select r.known, r.admission from r`, params);
    return { read: rows[0]!, fact: null };
  }
  const clear = `clear as materialized (
       select 1 from r
       where r.known is null and jsonb_array_length(r.admission->'rejected') = 0
         and not ${mightBeTombstoned(parameter, key, write.fact.content, write.keyedHash)}
     )`;
  const writes = factWithVectorExpressions(parameter, tx, write.fact, write.vector, write.events, 'exists (select 1 from clear)');
  const { rows } = await tx.query<RememberRead & { fact: Record<string, unknown> | null }>(
    `with ${read}, ${clear}, ${writes}
     select r.known, r.admission, (select to_jsonb(f) from f) as fact from r cross join (select count(*) from e) e_rows`,
    params,
  );
  const row = rows[0]!;
  return { read: { known: row.known, admission: row.admission }, fact: row.fact === null ? null : toFact(factRowFromJson(row.fact)) };
}
