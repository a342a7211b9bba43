import type { Database, Transaction } from '@roster/db';
import { redactSecrets } from './redact.js';
import type { Actor } from './types.js';

/** One mutation of memory, as the audit log records it. Never the content of a fact. */
export interface MemoryEvent {
  agentId: string;
  personId: string | null;
  actor: Actor;
  action: string;
  targetKind: 'fact' | 'tombstone' | 'lesson' | 'agent' | 'approval' | 'mirror_case';
  targetId: string | null;
  detail?: Record<string, unknown>;
}

/**
 * Append one event to the agent's hash chain, in the caller's transaction.
 * String values in the detail are redacted first; callers put ids, hashes,
 * states and counts there, never memory content.
 */
export async function appendEvent(tx: Transaction, event: MemoryEvent): Promise<{ id: string; seq: number; hash: string }> {
  const detail = redactDetail(event.detail ?? {});
  const { rows } = await tx.query<{ id: string; seq: string; hash: string }>(
    `select id, seq, hash from roster_append_event($1, $2, $3, $4, $5, $6, $7, $8)`,
    [event.agentId, event.personId, event.actor.kind, event.actor.id ?? null, event.action, event.targetKind, event.targetId, JSON.stringify(detail)],
  );
  const row = rows[0]!;
  return { id: row.id, seq: Number(row.seq), hash: row.hash };
}

/** Append many events, in order, in one statement (batch jobs); each is chained and checked as by appendEvent. */
export async function appendEvents(tx: Transaction, events: readonly MemoryEvent[]): Promise<number> {
  if (events.length === 0) return 0;
  const payload = events.map((event) => ({
    agent_id: event.agentId,
    person_id: event.personId,
    actor_kind: event.actor.kind,
    actor_id: event.actor.id ?? null,
    action: event.action,
    target_kind: event.targetKind,
    target_id: event.targetId,
    detail: redactDetail(event.detail ?? {}),
  }));
  const { rows } = await tx.query<{ count: number }>('select roster_append_events($1::jsonb) as count', [JSON.stringify(payload)]);
  return Number(rows[0]?.count ?? 0);
}

function redactDetail(value: unknown): unknown {
  if (typeof value === 'string') return redactSecrets(value).text;
  if (Array.isArray(value)) return value.map(redactDetail);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, redactDetail(inner)]));
  }
  return value;
}

/** The state of one agent's chain. */
export interface ChainReport {
  agentId: string;
  events: number;
  ok: boolean;
  /** The first broken link: its sequence number, id and what is wrong. */
  broken: { seq: number; id: string; problem: string } | null;
}

/**
 * Recompute every chain (or one agent's) and name the first broken link.
 * Used by `roster audit verify`, the owner's tool.
 */
export async function verifyAudit(database: Database, agentId?: string): Promise<ChainReport[]> {
  return database.adminScope('audit verify: recompute the memory event chains', async (tx) => {
    const { rows } = await tx.query<{ agent_id: string; events: string; broken_seq: string | null; broken_id: string | null; problem: string | null }>(
      'select * from roster_verify_events($1::uuid)',
      [agentId ?? null],
    );
    return rows.map((row) => ({
      agentId: row.agent_id,
      events: Number(row.events),
      ok: row.broken_seq === null,
      broken: row.broken_seq === null ? null : { seq: Number(row.broken_seq), id: row.broken_id!, problem: row.problem! },
    }));
  });
}

/** One row of the audit log, as the owner reads it: ids, states and counts, never content. */
export interface AuditEntry {
  id: string;
  agentId: string;
  seq: number;
  personId: string | null;
  actorKind: string;
  actorId: string | null;
  action: string;
  targetKind: string;
  targetId: string | null;
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
