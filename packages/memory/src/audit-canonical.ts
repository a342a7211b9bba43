/**
 * The canonical text of an audit event, which its hash covers: every field in
 * a fixed order, object keys sorted, secrets redacted from the detail first.
 */
import { redactSecrets } from './redact.js';

/** Like JSON.stringify, with every object's keys in one order, so equal values give equal text. */
function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, inner]) => inner !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, inner]) => `${JSON.stringify(key)}:${canonicalJson(inner)}`).join(',')}}`;
}

/** The fields of a stored event that its hash covers. */
export interface EventFields {
  id: string;
  agentId: string;
  seq: number;
  personId: string | null;
  actorKind: string;
  actorId: string | null;
  action: string;
  targetKind: string;
  targetId: string | null;
  detail: unknown;
  /** UTC, with microseconds: `2025-01-31T09:30:00.123456Z`. */
  occurredAt: string;
}

/** The canonical text of an event: every field, in a fixed order, the detail with its keys sorted. */
export function canonicalEvent(event: EventFields): string {
  return canonicalJson({
    v: 1,
    id: event.id,
    agent_id: event.agentId,
    seq: event.seq,
    person_id: event.personId,
    actor_kind: event.actorKind,
    actor_id: event.actorId,
    action: event.action,
    target_kind: event.targetKind,
    target_id: event.targetId,
    detail: event.detail,
    occurred_at: event.occurredAt,
  });
}

export function redactDetail(value: unknown): unknown {
  if (typeof value === 'string') return redactSecrets(value).text;
  if (Array.isArray(value)) return value.map(redactDetail);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, redactDetail(inner)]));
  }
  return value;
}
