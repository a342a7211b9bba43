/**
 * The audit log: one row per mutation of memory in `memory_events`, chained
 * per agent. Each event's hash is HMAC-SHA256, keyed with the installation
 * key, of the previous event's hash followed by the event's canonical text,
 * and it is computed and checked here, in JavaScript. The database only
 * stores the rows: a function it holds could be redefined by whoever owns
 * the schema, but without the key no one can recompute a link, so an edited
 * or inserted event shows at its place in the chain. Removing the last events
 * leaves a shorter chain that is whole; an operator who keeps a head
 * elsewhere (`heads`) catches that with `verify({ expect })`.
 */
import { createHash, createHmac, randomUUID } from 'node:crypto';
import type { InstallationKey } from '@roster/config';
import type { ChainHeadRow, Database, Transaction, WriteAlong } from '@roster/db';
import { RosterError } from '@roster/errors';
import { canonicalEvent, redactDetail, type EventFields } from './audit-canonical.js';
import type { Actor } from './types.js';

/** One mutation of memory, as the audit log records it. Never the content of a fact. */
export interface MemoryEvent {
  agentId: string;
  personId: string | null;
  /** `system`: Roster itself (sealing a chain from before keying). */
  actor: Actor | { kind: 'system'; id?: string };
  action: string;
  targetKind: 'fact' | 'tombstone' | 'lesson' | 'agent' | 'approval' | 'mirror_case' | 'person';
  targetId: string | null;
  detail?: Record<string, unknown>;
}

/** Where an agent's chain ends: its last event's sequence number and hash. */
export interface ChainHead {
  agentId: string;
  seq: number;
  hash: string;
}

/** The state of one agent's chain. */
export interface ChainReport {
  agentId: string;
  /** How many events the chain holds. */
  events: number;
  /** How many of them are from before the chain was keyed (hashed with plain SHA-256). */
  unkeyed: number;
  ok: boolean;
  /** The first broken link: its sequence number, id (null when the event is missing) and what is wrong. */
  broken: { seq: number; id: string | null; problem: string } | null;
  /** The last event, or null for an empty chain. */
  head: { seq: number; hash: string } | null;
}

export interface VerifyOptions {
  /** Only this agent's chain. */
  agentId?: string;
  /**
   * Heads kept elsewhere: each chain named must still hold that event with
   * that hash. A chain cut short, or rewritten, before it fails.
   */
  expect?: readonly ChainHead[];
}

/** The audit log of one installation: appends and checks events with its key. */
export interface AuditLog {
  /**
   * Append one event to its agent's chain, in the caller's transaction. String
   * values of the detail are redacted first; callers put ids, keyed hashes,
   * states and counts there, never memory content. A scoped caller may only
   * append to its own agent, about its own person (the database refuses).
   */
  append(tx: Transaction, event: MemoryEvent): Promise<{ id: string; seq: number; hash: string }>;
  /** Append many events, in order, with two statements (batch jobs); each is chained as by `append`. */
  appendMany(tx: Transaction, events: readonly MemoryEvent[]): Promise<number>;
  /**
   * Link `events` to the chains whose heads the caller read (and locked):
   * its transaction opened with them (`ScopeOptions.chainHeads`), for a caller that
   * stores them with what they record, in one statement: `store` is the write
   * that does. Nothing may be appended to those chains in between (the
   * database refuses a link that does not continue its chain).
   */
  link(heads: readonly ChainHeadRow[], events: readonly MemoryEvent[]): { store: WriteAlong; appended: Array<{ id: string; seq: number; hash: string }> };
  /** Every chain's head (or one agent's), for an operator to keep elsewhere. */
  heads(agentId?: string): Promise<ChainHead[]>;
  /**
   * Append one keyed event (`audit-keyed`) to every chain that ends with an
   * event from before keying, and return how many. From then on no chain may
   * end unkeyed, so a chain its owner rewrote the unkeyed way (the only way
   * open without the key) shows. `memory.prepare` calls it.
   */
  seal(): Promise<number>;
  /** Recompute every chain (or one agent's) and name the first broken link. */
  verify(options?: VerifyOptions): Promise<ChainReport[]>;
}

/** How the hash of an event was made. Events from before keying hold `sha256`. */
export type HashKind = 'sha256' | 'hmac-sha256';

const auditPurpose = 'roster/audit-chain/v1';
/** Events read per statement while verifying, so a long chain never sits in memory whole. */
const verifyPage = 5000;

interface EventRow {
  id: string;
  seq: string;
  person_id: string | null;
  actor_kind: string;
  actor_id: string | null;
  action: string;
  target_kind: string;
  target_id: string | null;
  detail: unknown;
  occurred_at: string;
  prev_hash: string | null;
  hash: string;
  hash_kind: string;
  legacy_canonical: string | null;
}

/** The audit log keyed with `key`, over `database` (for heads and verification; appends use the caller's transaction). */
export function createAuditLog(options: { database: Database; key: InstallationKey }): AuditLog {
  const { database } = options;
  const secret = options.key.derive(auditPurpose);
  const chainHash = (previous: string | null, canonical: string): string =>
    createHmac('sha256', secret)
      .update(previous ?? '', 'utf8')
      .update(canonical, 'utf8')
      .digest('hex');

  const chainAgents = (events: readonly MemoryEvent[]): string[] => [...new Set(events.map((event) => event.agentId))].sort();

  async function appendMany(tx: Transaction, events: readonly MemoryEvent[]): Promise<Array<{ id: string; seq: number; hash: string }>> {
    if (events.length === 0) return [];
    // Locks each chain for the rest of the transaction and reads where it ends.
    const { rows } = await tx.query<ChainHeadRow>('select agent_id, seq, hash, at from roster_event_heads($1::uuid[])', [chainAgents(events)]);
    const { store, appended } = link(rows, events);
    await tx.query(store.sql('$1', 'true'), [store.value]);
    return appended;
  }

  function link(rows: readonly ChainHeadRow[], events: readonly MemoryEvent[]): { store: WriteAlong; appended: Array<{ id: string; seq: number; hash: string }> } {
    const heads = new Map(rows.map((row) => [row.agent_id, { seq: Number(row.seq), hash: row.hash }]));
    const at = rows[0]?.at;
    if (at === undefined) throw new RosterError('audit_head_missing', 'The database did not return the audit chain heads: run roster migrate.');
    const missing = chainAgents(events).find((agentId) => !heads.has(agentId));
    if (missing !== undefined) throw new RosterError('audit_head_missing', `The audit chain head of agent ${missing} was not read before its event.`);
    const stored: Array<Record<string, unknown>> = [];
    const appended: Array<{ id: string; seq: number; hash: string }> = [];
    for (const event of events) {
      const head = heads.get(event.agentId)!;
      // The detail as the database will hand it back: what JSON keeps of it.
      const detail = JSON.parse(JSON.stringify(redactDetail(event.detail ?? {}))) as unknown;
      const fields: EventFields = {
        id: randomUUID(),
        agentId: event.agentId,
        seq: head.seq + 1,
        personId: event.personId,
        actorKind: event.actor.kind,
        actorId: event.actor.id ?? null,
        action: event.action,
        targetKind: event.targetKind,
        targetId: event.targetId,
        detail,
        occurredAt: at,
      };
      const hash = chainHash(head.hash, canonicalEvent(fields));
      stored.push({
        id: fields.id,
        agent_id: fields.agentId,
        seq: fields.seq,
        person_id: fields.personId,
        actor_kind: fields.actorKind,
        actor_id: fields.actorId,
        action: fields.action,
        target_kind: fields.targetKind,
        target_id: fields.targetId,
        detail,
        occurred_at: at,
        prev_hash: head.hash,
        hash,
      });
      appended.push({ id: fields.id, seq: fields.seq, hash });
      heads.set(event.agentId, { seq: fields.seq, hash });
    }
    // The database checks each link continues its chain, and stores the rows; it computes no hash.
    return { store: { value: JSON.stringify(stored), sql: (parameter, condition) => `select roster_insert_events(${parameter}::jsonb) where ${condition}` }, appended };
  }

  async function verifyChain(tx: Transaction, agentId: string, expected: ChainHead | undefined): Promise<ChainReport> {
    const report: ChainReport = { agentId, events: 0, unkeyed: 0, ok: true, broken: null, head: null };
    const fail = (seq: number, id: string | null, problem: string): ChainReport => ({ ...report, ok: false, broken: { seq, id, problem } });
    let previous: string | null = null;
    let keyed = false;
    let lastId: string | null = null;
    let after = 0;
    for (;;) {
      const { rows } = await tx.query<EventRow>(
        `select e.id, e.seq, e.person_id, e.actor_kind, e.actor_id, e.action, e.target_kind, e.target_id, e.detail,
           to_char(e.occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as occurred_at,
           e.prev_hash, e.hash, e.hash_kind,
           case when e.hash_kind = 'sha256' then jsonb_build_object(
             'agent_id', e.agent_id, 'seq', e.seq, 'person_id', e.person_id,
             'actor_kind', e.actor_kind, 'actor_id', e.actor_id, 'action', e.action,
             'target_kind', e.target_kind, 'target_id', e.target_id, 'detail', e.detail,
             'occurred_at', to_char(e.occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))::text end as legacy_canonical
         from memory_events e where e.agent_id = $1 and e.seq > $2 order by e.seq limit $3`,
        [agentId, after, verifyPage],
      );
      for (const row of rows) {
        const seq = Number(row.seq);
        report.events += 1;
        if (seq !== report.events) return fail(seq, row.id, `expected event ${report.events}, found ${seq}: an event is missing`);
        if (row.prev_hash !== previous) return fail(seq, row.id, 'its link to the previous event does not match');
        let recomputed: string;
        if (row.hash_kind === 'hmac-sha256') {
          keyed = true;
          recomputed = chainHash(previous, canonicalEvent({
            id: row.id,
            agentId,
            seq,
            personId: row.person_id,
            actorKind: row.actor_kind,
            actorId: row.actor_id,
            action: row.action,
            targetKind: row.target_kind,
            targetId: row.target_id,
            detail: row.detail,
            occurredAt: row.occurred_at,
          }));
        } else if (row.hash_kind === 'sha256') {
          // Appended before the chain was keyed: plain SHA-256 over Postgres's own canonical text.
          if (keyed) return fail(seq, row.id, 'an unkeyed event follows keyed ones: it was not appended by Roster');
          report.unkeyed += 1;
          recomputed = createHash('sha256')
            .update(previous ?? '', 'utf8')
            .update(row.legacy_canonical ?? '', 'utf8')
            .digest('hex');
        } else {
          return fail(seq, row.id, `its hash kind ${JSON.stringify(row.hash_kind)} is unknown`);
        }
        if (recomputed !== row.hash) return fail(seq, row.id, 'its content does not match its hash');
        if (expected !== undefined && seq === expected.seq && row.hash !== expected.hash) {
          return fail(seq, row.id, 'its hash is not the expected head: the chain was rewritten');
        }
        previous = row.hash;
        lastId = row.id;
        report.head = { seq, hash: row.hash };
      }
      if (rows.length < verifyPage) break;
      after = report.events;
    }
    if (!keyed && report.events > 0) {
      return fail(report.events, lastId, 'the chain ends with an unkeyed event: Roster seals every chain with a keyed one, so it was rewritten');
    }
    if (expected !== undefined && report.events < expected.seq) {
      return fail(expected.seq, null, `the chain ends at event ${report.events}, before the expected head at event ${expected.seq}: events were removed`);
    }
    return report;
  }

  return {
    async append(tx, event) {
      const [appended] = await appendMany(tx, [event]);
      return appended!;
    },

    async appendMany(tx, events) {
      return (await appendMany(tx, events)).length;
    },

    link,

    async heads(agentId) {
      return database.adminScope('audit head: read where each memory event chain ends', async (tx) => {
        const { rows } = await tx.query<{ agent_id: string; seq: string; hash: string }>(
          `select a.id as agent_id, h.seq, h.hash from agents a
           cross join lateral (select e.seq, e.hash from memory_events e where e.agent_id = a.id order by e.seq desc limit 1) h
           where $1::uuid is null or a.id = $1
           order by a.id`,
          [agentId ?? null],
        );
        return rows.map((row) => ({ agentId: row.agent_id, seq: Number(row.seq), hash: row.hash }));
      });
    },

    async seal() {
      return database.adminScope('audit: seal the chains from before keying', async (tx) => {
        const endsUnkeyed = async () =>
          (
            await tx.query<{ agent_id: string }>(
              `select a.id as agent_id from agents a
               cross join lateral (select e.hash_kind from memory_events e where e.agent_id = a.id order by e.seq desc limit 1) h
               where h.hash_kind = 'sha256' order by a.id`,
            )
          ).rows.map((row) => row.agent_id);
        const candidates = await endsUnkeyed();
        if (candidates.length === 0) return 0;
        // Under the chains' locks, the ones another process has not sealed meanwhile.
        for (const agentId of candidates) await tx.query('select pg_advisory_xact_lock(roster_event_chain_lock($1))', [agentId]);
        const unsealed = await endsUnkeyed();
        return appendMany(
          tx,
          unsealed.map((agentId) => ({
            agentId,
            personId: null,
            actor: { kind: 'system', id: 'installation key' },
            action: 'audit-keyed',
            targetKind: 'agent',
            targetId: agentId,
          })),
        ).then((appended) => appended.length);
      });
    },

    async verify(verifyOptions = {}) {
      const { agentId } = verifyOptions;
      const expected = new Map((verifyOptions.expect ?? []).map((head) => [head.agentId, head]));
      const withEvents = await database.adminScope('audit verify: name the chains', async (tx) => {
        const { rows } = await tx.query<{ id: string }>(
          `select a.id from agents a
           where ($1::uuid is null or a.id = $1) and exists (select 1 from memory_events e where e.agent_id = a.id)`,
          [agentId ?? null],
        );
        return rows.map((row) => row.id);
      });
      // A chain that was expected but holds nothing any more is checked too: it was cut to nothing.
      const chains = [...new Set([...withEvents, ...[...expected.keys()].filter((id) => agentId === undefined || id === agentId)])].sort();
      const reports: ChainReport[] = [];
      for (const chain of chains) {
        reports.push(await database.adminScope('audit verify: recompute a memory event chain', (tx) => verifyChain(tx, chain, expected.get(chain))));
      }
      return reports;
    },
  };
}

/** One row of the audit log, as the owner reads it: ids, states and counts, never content. */
export interface AuditEntry extends Omit<EventFields, 'detail' | 'occurredAt'> {
  detail: Record<string, unknown>;
  occurredAt: Date;
  hash: string;
}

/** The newest audit events (of one agent, of one action), newest first: the owner's tool. */
export async function listAuditEvents(database: Database, options: { agentId?: string; action?: string; limit?: number } = {}): Promise<AuditEntry[]> {
  const limit = Math.min(Math.max(Math.trunc(options.limit ?? 100), 1), 1000);
  return database.adminScope('audit: list memory events', async (tx) => {
    const { rows } = await tx.query<{
      id: string;
      agent_id: string;
      seq: string;
      person_id: string | null;
      actor_kind: string;
      actor_id: string | null;
      action: string;
      target_kind: string;
      target_id: string | null;
      detail: Record<string, unknown>;
      occurred_at: Date;
      hash: string;
    }>(
      `select id, agent_id, seq, person_id, actor_kind, actor_id, action, target_kind, target_id, detail, occurred_at, hash
       from memory_events where ($1::uuid is null or agent_id = $1) and ($2::text is null or action = $2)
       order by occurred_at desc, seq desc limit $3`,
      [options.agentId ?? null, options.action ?? null, limit],
    );
    return rows.map((row) => ({
      id: row.id,
      agentId: row.agent_id,
      seq: Number(row.seq),
      personId: row.person_id,
      actorKind: row.actor_kind,
      actorId: row.actor_id,
      action: row.action,
      targetKind: row.target_kind,
      targetId: row.target_id,
      detail: row.detail,
      occurredAt: row.occurred_at,
      hash: row.hash,
    }));
  });
}
