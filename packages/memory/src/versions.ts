import type { ScopedTransaction } from '@roster/db';
import { FactNotCurrentError } from './errors.js';
import { factColumns, toFact, type FactRow } from './rows.js';
import type { Fact } from './types.js';

/**
 * The versions of a fact, in valid time and record time.
 *
 * A row of `facts` is one belief: its content holds from `valid_from` until
 * `valid_to` (valid time), and it was believed from `recorded_at` until
 * `superseded_at` (record time). A belief is never rewritten; a change only
 * closes a row's record time and records new rows from that instant, so that
 * what was believed at any moment about any moment stays answerable.
 *
 * - "That changed" at instant u: the current row is believed until u; from u on
 *   a restatement of it (same content, valid only until u) is believed, and the
 *   new value, valid from u. The restatement `restates` the row; the row is
 *   `restated_as` the restatement.
 * - "That was wrong" at instant c: the current row is retracted and believed
 *   until c; from c on the right value is believed over the same valid time.
 *   The wrong content then holds at no valid time.
 *
 * `superseded_by` links a version to the next one (the row the change wrote).
 * A version is one row and, once it changed, its restatement; only the
 * current version changes, so a restatement is never restated again.
 */

export interface HistoryEntry {
  fact: Fact;
  /** How this version relates to the one asked about. */
  relation: 'earlier' | 'this' | 'later';
  /** The audit event that recorded this version (a restatement: the one that recorded what it restates), when the scope may read it. */
  event: VersionEvent | null;
}

/** Who recorded a version, how and when, as the audit log has it. */
export interface VersionEvent {
  id: string;
  action: string;
  actorKind: string;
  actorId: string | null;
  occurredAt: Date;
}

/** The SQL condition for a row that is believed now and valid now: what search, recall and list read. */
export function believedNow(alias = 'f'): string {
  return `${alias}.superseded_at is null and (${alias}.valid_to is null or ${alias}.valid_to > now())`;
}

/** The same condition on a fact already read, at `now`. */
export function isBelievedNow(fact: Fact, now: Date): boolean {
  return fact.supersededAt === null && (fact.validTo === null || fact.validTo > now);
}

/** The last version of the chain the fact belongs to: the fact itself when nothing replaced it. */
async function latestVersion(tx: ScopedTransaction, factId: string): Promise<Fact> {
  const { rows } = await tx.query<FactRow>(
    `with recursive forward as (
       select f.id, coalesce(f.superseded_by, f.restated_as) as next, 0 as depth from facts f where f.id = $1
       union all
       select f.id, coalesce(f.superseded_by, f.restated_as), w.depth + 1 from forward w join facts f on f.id = w.next where w.depth < 1000
     )
     select ${factColumns} from forward w join facts f on f.id = w.id order by w.depth desc limit 1`,
    [factId],
  );
  return toFact(rows[0]!);
}

/**
 * Refuse to change a fact that is not the current version of its chain (it
 * changed, was corrected, or is a restatement), naming the version that is.
 * A fact that ends its chain passes: its own state decides what it allows.
 */
export async function requireCurrent(tx: ScopedTransaction, fact: Fact, action: string): Promise<void> {
  if (fact.supersededBy === null && fact.restatedAs === null) return;
  const latest = await latestVersion(tx, fact.id);
  if (latest.id === fact.id) return;
  const why = fact.trust === 'retracted' ? 'it was corrected' : 'it changed since';
  throw new FactNotCurrentError(action, fact.id, latest, why);
}

/**
 * "That changed": `successor` (just written) holds from now; the current
 * version `old` is believed until now and restated, valid until the
 * successor's start, from now on. Returns the restatement and the successor.
 */
export async function recordUpdate(tx: ScopedTransaction, old: Fact, successor: Fact): Promise<{ previous: Fact; fact: Fact }> {
  // The new value starts now, and never before the old one did.
  const started = await tx.query<FactRow>(
    `update facts f set valid_from = greatest(f.recorded_at, o.valid_from) from facts o where f.id = $1 and o.id = $2 returning ${factColumns}`,
    [successor.id, old.id],
  );
  const restated = await tx.query<FactRow>(
    `insert into facts as f (agent_id, person_id, audience, content, content_hash, category, trust, valid_from, valid_to,
       superseded_by, source_message_ids, actor_kind, actor_id, channel, tool, untrusted_input, uses, last_used_at, restates)
     select o.agent_id, o.person_id, o.audience, o.content, o.content_hash, o.category, o.trust, o.valid_from, n.valid_from,
       n.id, o.source_message_ids, o.actor_kind, o.actor_id, o.channel, o.tool, o.untrusted_input, o.uses, o.last_used_at, o.id
     from facts o, facts n where o.id = $1 and n.id = $2
     returning ${factColumns}`,
    [old.id, successor.id],
  );
  const previous = toFact(restated.rows[0]!);
  await tx.query('update facts set superseded_at = now(), superseded_by = $2, restated_as = $3 where id = $1', [old.id, successor.id, previous.id]);
  return { previous, fact: toFact(started.rows[0]!) };
}

/**
 * "That was wrong": `successor` (just written) takes the valid time of the
 * current version `old`, which is retracted and believed until now. Returns
 * the retracted row and the successor.
 */
export async function recordCorrection(tx: ScopedTransaction, old: Fact, successor: Fact): Promise<{ previous: Fact; fact: Fact }> {
  const placed = await tx.query<FactRow>(
    `update facts f set valid_from = o.valid_from, valid_to = o.valid_to from facts o where f.id = $1 and o.id = $2 returning ${factColumns}`,
    [successor.id, old.id],
  );
  const retracted = await tx.query<FactRow>(
    `update facts f set trust = 'retracted', superseded_at = now(), superseded_by = $2 where f.id = $1 returning ${factColumns}`,
    [old.id, successor.id],
  );
  return { previous: toFact(retracted.rows[0]!), fact: toFact(placed.rows[0]!) };
}

/**
 * The versions of a fact, oldest first, each as believed now: a version that
 * changed is shown as its restatement. Asked about a row that was restated,
 * the restatement is `this`.
 */
export async function versionHistory(tx: ScopedTransaction, factId: string): Promise<HistoryEntry[]> {
  const { rows } = await tx.query<FactRow & { depth: number }>(
    `with recursive start as (
       select coalesce(f.restated_as, f.id) as id from facts f where f.id = $1
     ), earlier as (
       select f.id, coalesce(f.restates, f.id) as version, 0 as depth from facts f join start s on f.id = s.id
       union all
       select p.id, coalesce(p.restates, p.id), e.depth - 1
       from earlier e join facts p on p.superseded_by = e.version and p.restated_as is null
       where e.depth > -100
     ), later as (
       select f.id, f.superseded_by as next, 0 as depth from facts f join start s on f.id = s.id
       union all
       select n.id, n.superseded_by, l.depth + 1
       from later l join facts n on (n.id = l.next or n.restates = l.next) and n.restated_as is null
       where l.depth < 100
     ), chain as (
       select id, depth from earlier union all select id, depth from later where depth > 0
     )
     select ${factColumns}, c.depth from chain c join facts f on f.id = c.id order by c.depth`,
    [factId],
  );
  const facts = rows.map((row) => ({ fact: toFact(row), depth: row.depth }));
  const recordedBy = (fact: Fact) => fact.restates ?? fact.id;
  const events = await tx.query<{ target_id: string; id: string; action: string; actor_kind: string; actor_id: string | null; occurred_at: Date }>(
    `select distinct on (e.target_id) e.target_id, e.id, e.action, e.actor_kind, e.actor_id, e.occurred_at
     from memory_events e where e.target_kind = 'fact' and e.target_id = any($1::text[])
     order by e.target_id, e.seq`,
    [facts.map(({ fact }) => recordedBy(fact))],
  );
  const byTarget = new Map(events.rows.map((row) => [row.target_id, { id: row.id, action: row.action, actorKind: row.actor_kind, actorId: row.actor_id, occurredAt: row.occurred_at }]));
  return facts.map(({ fact, depth }) => ({
    fact,
    relation: depth < 0 ? 'earlier' : depth > 0 ? 'later' : 'this',
    event: byTarget.get(recordedBy(fact)) ?? null,
  }));
}

/** Every row of a fact's chain: each version before and after it, and every restatement of them. */
export async function chainIds(tx: ScopedTransaction, factId: string): Promise<string[]> {
  const { rows } = await tx.query<{ id: string }>(
    `with recursive versions as (
       select f.id, f.superseded_by, f.restates, f.restated_as from facts f where f.id = $1
       union
       select f.id, f.superseded_by, f.restates, f.restated_as from facts f join versions v
         on f.superseded_by = v.id or f.id = v.superseded_by or f.restates = v.id or f.id = v.restates or f.id = v.restated_as
     )
     select id from versions`,
    [factId],
  );
  return rows.map((row) => row.id);
}

/**
 * What was believed at `recordedAt` to hold at `validAt`. Times are compared
 * to the millisecond, the precision every time memory returns has, so asking
 * at a fact's own `recordedAt` sees it. Disputed, faded and forgotten facts
 * are withheld whenever asked about.
 */
export async function believedAt(tx: ScopedTransaction, validAt: Date, recordedAt: Date): Promise<Fact[]> {
  const { rows } = await tx.query<FactRow>(
    `select ${factColumns} from facts f
     where f.trust not in ('forgotten', 'faded', 'disputed')
       and date_trunc('milliseconds', f.recorded_at) <= $2
       and (f.superseded_at is null or date_trunc('milliseconds', f.superseded_at) > $2)
       and date_trunc('milliseconds', f.valid_from) <= $1
       and (f.valid_to is null or date_trunc('milliseconds', f.valid_to) > $1)
     order by f.valid_from, f.recorded_at, f.id`,
    [validAt, recordedAt],
  );
  return rows.map(toFact);
}
