import type { InstallationKey } from '@roster/config';
import { enqueue, type Database, type Scope, type ScopedTransaction } from '@roster/db';
import { FactStateError } from './errors.js';
import { secondPerson } from '@roster/contracts';
import { contentHash, isNearDuplicate, keyedContentHash, keyedMinhash, minhash, normalizeText } from './text.js';
import type { Actor, Fact, Provenance } from './types.js';
import { chainIds } from './versions.js';

/** What a tombstone keeps of a forgotten text, and how it was made. */
export interface TombstoneRow {
  content_hash: string;
  minhash: string[];
  /** `hmac-sha256`: keyed with the installation key. `sha256`: made before keying (unkeyed hash and MinHash). */
  hash_kind: string;
}

/**
 * Whether a text matches a tombstone: exactly (same normalised hash) or
 * nearly (estimated Jaccard ≥ 0.8), compared the way the tombstone was made.
 * Tombstones from before keying cannot be re-keyed (their text is gone), so
 * they are still compared unkeyed, until lifted; those values are computed
 * only when such a tombstone is there.
 */
export function tombstoneMatcher(key: InstallationKey, text: string): (tombstone: TombstoneRow) => boolean {
  const keyed = { hash: keyedContentHash(key, text), signature: keyedMinhash(key, text) };
  let unkeyed: { hash: string; signature: number[] } | undefined;
  return (tombstone) => {
    let probe = keyed;
    if (tombstone.hash_kind === 'sha256') probe = unkeyed ??= { hash: contentHash(text), signature: minhash(text) };
    // A kind this version does not know refuses: better a refusal than a forgotten text coming back.
    else if (tombstone.hash_kind !== 'hmac-sha256') return true;
    if (tombstone.content_hash === probe.hash) return true;
    return tombstone.minhash.length === probe.signature.length && isNearDuplicate(probe.signature, tombstone.minhash.map(Number));
  };
}


export interface ForgetContext {
  database: Database;
  key: InstallationKey;
  loadFact(tx: ScopedTransaction, factId: string, forUpdate?: boolean): Promise<Fact>;
  event(tx: ScopedTransaction, actor: Actor, action: string, fact: Fact, detail?: Record<string, unknown>): Promise<void>;
}

export interface ForgetResult {
  fact: Fact;
  tombstoneId: string;
  messagesErased: number;
  erased: Record<string, number>;
}

/**
 * Forget a fact: its whole chain of versions and every row with the same
 * words for that person; a keyed tombstone; the words erased from every
 * other place in the database (roster_forget_everywhere; the places are
 * listed in forget-places.ts); the vectors deleted; the rows' hash cleared;
 * the erase of the files queued; one audit event. One scoped transaction.
 */
export async function forgetFact(context: ForgetContext, scope: Scope, factId: string, provenance: Provenance): Promise<ForgetResult> {
  const { database, key, loadFact, event } = context;
  return database.withScope(scope, async (tx) => {
    const fact = await loadFact(tx, factId, true);
    if (fact.trust === 'forgotten' || fact.content === null) throw new FactStateError('That fact is already forgotten.');
    const hash = contentHash(fact.content);
    // The whole chain goes: every earlier and later version (retracted, changed, restated) and every copy with the same words.
    const chain = await tx.query<{ id: string; content: string; source_message_ids: string[] }>(
      `select f.id, f.content, f.source_message_ids from facts f
       where (f.id = any($1) or (f.content_hash = $2 and f.person_id is not distinct from $3))
         and f.trust <> 'forgotten'`,
      [await chainIds(tx, fact.id), hash, fact.personId],
    );
    const ids = [...new Set([fact.id, ...chain.rows.map((row) => row.id)])];
    // The words as said, and as an agent says them back ("my locker …" → "your locker …").
    const contents = [fact.content, ...chain.rows.map((row) => row.content)];
    const phrases = [...new Set([...contents, ...contents.map(secondPerson)].map(normalizeText).filter((phrase) => phrase !== ''))];
    const sources = [...new Set([...fact.sourceMessageIds, ...chain.rows.flatMap((row) => row.source_message_ids)])];
    // Keyed, so that no dictionary of guesses finds the words again without the installation key.
    const tombstone = await tx.query<{ id: string }>(
      `insert into tombstones (agent_id, person_id, fact_id, content_hash, minhash, hash_kind, source_message_ids)
       values ($1, $2, $3, $4, $5, 'hmac-sha256', $6) returning id`,
      [scope.agentId, fact.personId, fact.id, keyedContentHash(key, fact.content), keyedMinhash(key, fact.content), sources],
    );
    // The request that asked to forget is erased with the rest.
    const reached = [...new Set([...sources, ...(provenance.sourceMessageIds ?? [])])];
    const erased = await tx.query<{ counts: Record<string, number> }>('select roster_forget_everywhere($1, $2) as counts', [reached, phrases]);
    // And the messages a gateway took that wait to be answered (channel_inbox).
    const waiting = await tx.query<{ count: number }>('select roster_forget_inbox($1) as count', [phrases]);
    await tx.query('delete from fact_embeddings where fact_id = any($1)', [ids]);
    // The row stays (history shows that something existed), with no hash of its words either.
    await tx.query(`update facts set content = '', content_hash = '', trust = 'forgotten' where id = any($1)`, [ids]);
    const forgotten = await loadFact(tx, fact.id);
    const tombstoneId = tombstone.rows[0]!.id;
    const reach: Record<string, number> = { ...(erased.rows[0]?.counts ?? {}), channel_inbox: Number(waiting.rows[0]?.count ?? 0) };
    // The files too: an erase job rewrites every table this forget reached (one pending erase, however many forgets).
    await enqueue(tx, { queue: 'erase', payload: { tables: ['facts', 'fact_embeddings', ...Object.keys(reach)] } });
    const messagesErased = Number(reach['messages'] ?? 0);
    await event(tx, provenance.actor, 'forget', forgotten, { tombstone: tombstoneId, facts: ids, erased: reach });
    return { fact: forgotten, tombstoneId, messagesErased, erased: reach };
  });
}
