import type { Fact } from './types.js';

/** The columns every fact read selects, in the order `toFact` expects. */
export const factColumns = `f.id, f.agent_id, f.person_id, f.audience, f.content, f.category, f.trust, f.valid_from, f.valid_to,
  f.recorded_at, f.superseded_at, f.superseded_by, f.source_message_ids, f.actor_kind, f.actor_id, f.channel, f.tool,
  f.untrusted_input, f.uses, f.last_used_at, f.restates, f.restated_as`;

export interface FactRow {
  id: string;
  agent_id: string;
  person_id: string | null;
  audience: Fact['audience'];
  content: string;
  category: string;
  trust: Fact['trust'];
  valid_from: Date;
  valid_to: Date | null;
  recorded_at: Date;
  superseded_at: Date | null;
  superseded_by: string | null;
  source_message_ids: string[];
  actor_kind: Fact['actorKind'];
  actor_id: string | null;
  channel: string | null;
  tool: string | null;
  untrusted_input: boolean;
  uses: number;
  last_used_at: Date | null;
  restates: string | null;
  restated_as: string | null;
}

export function toFact(row: FactRow): Fact {
  return {
    id: row.id,
    agentId: row.agent_id,
    personId: row.person_id,
    audience: row.audience,
    content: row.trust === 'forgotten' ? null : row.content,
    category: row.category,
    trust: row.trust,
    validFrom: row.valid_from,
    validTo: row.valid_to,
    recordedAt: row.recorded_at,
    supersededAt: row.superseded_at,
    supersededBy: row.superseded_by,
    sourceMessageIds: row.source_message_ids ?? [],
    actorKind: row.actor_kind,
    actorId: row.actor_id,
    channel: row.channel,
    tool: row.tool,
    untrustedInput: row.untrusted_input,
    uses: row.uses,
    lastUsedAt: row.last_used_at,
    restates: row.restates,
    restatedAs: row.restated_as,
  };
}

const timeColumns = ['valid_from', 'valid_to', 'recorded_at', 'superseded_at', 'last_used_at'] as const;

/** A facts row as to_jsonb gives it (its times as text), as `pg` would. */
export function factRowFromJson(row: Record<string, unknown>): FactRow {
  const copy = { ...row };
  for (const column of timeColumns) if (typeof copy[column] === 'string') copy[column] = new Date(copy[column] as string);
  return copy as unknown as FactRow;
}
