import type { Database, Transaction } from '@roster/db';

/** Who decides: only a person. Jobs, schedules and "auto" modes have no way to be one. */
export interface Approver {
  kind: 'person';
  personId: string;
}

export interface Approval {
  id: string;
  agentId: string;
  text: string;
  evidence: unknown[];
  confidence: number | null;
  status: 'pending' | 'approved' | 'rejected';
  proposedByKind: 'agent' | 'job' | 'person';
  proposedBy: string | null;
  createdAt: Date;
}

export const approvalColumns = 'id, agent_id, person_id, text, evidence, confidence, status, proposed_by_kind, proposed_by, created_at';

export interface ApprovalRow {
  id: string;
  agent_id: string;
  person_id: string | null;
  text: string;
  evidence: unknown[];
  confidence: number | null;
  status: Approval['status'];
  proposed_by_kind: Approval['proposedByKind'];
  proposed_by: string | null;
  created_at: Date;
}

const toApproval = (row: ApprovalRow): Approval => ({
  id: row.id,
  agentId: row.agent_id,
  text: row.text,
  evidence: row.evidence,
  confidence: row.confidence,
  status: row.status,
  proposedByKind: row.proposed_by_kind,
  proposedBy: row.proposed_by,
  createdAt: row.created_at,
});

/**
 * A lesson proposed for a person to decide on: the one place a pending
 * approval is written, by an agent's propose_lesson (in its scope) or by the
 * review (across scopes). `personId` is whose conversations it would ride
 * in; null for every conversation of the agent.
 */
export async function proposeApproval(
  tx: Transaction,
  draft: { agentId: string; personId: string | null; text: string; evidence: unknown[]; confidence: number | null; proposedBy: { kind: 'agent' | 'job'; name: string } },
): Promise<{ approvalId: string }> {
  const { rows } = await tx.query<{ id: string }>(
    `insert into approvals (agent_id, person_id, kind, text, evidence, confidence, proposed_by_kind, proposed_by)
     values ($1, $2, 'lesson', $3, $4, $5, $6, $7) returning id`,
    [draft.agentId, draft.personId, draft.text, JSON.stringify(draft.evidence), draft.confidence, draft.proposedBy.kind, draft.proposedBy.name],
  );
  return { approvalId: rows[0]!.id };
}

export async function listApprovals(database: Database, options: { agentId?: string; status?: Approval['status'] } = {}): Promise<Approval[]> {
  return database.adminScope('owner: list approvals', async (tx) => {
    const { rows } = await tx.query<ApprovalRow>(
      `select ${approvalColumns} from approvals where ($1::uuid is null or agent_id = $1) and ($2::text is null or status = $2) order by created_at`,
      [options.agentId ?? null, options.status ?? null],
    );
    return rows.map(toApproval);
  });
}
