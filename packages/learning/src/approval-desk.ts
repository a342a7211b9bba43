import type { Database } from '@roster/db';
import type { AuditLog } from '@roster/memory';
import { listApprovals } from './approvals.js';
import { approveLesson, rejectApproval } from './lessons.js';

/** What the desk needs of the directory: the agents' names. */
export interface AgentNames {
  listAgents(options: { includeArchived: true }): Promise<ReadonlyArray<{ id: string; name: string }>>;
  agentById(id: string): Promise<{ name: string }>;
}

/** The owner's pending lessons as a channel shows them, and the decisions pressed there. */
export interface ApprovalDesk {
  /** What waits, with the handles of `channel` each was pushed to already. */
  pending(channel: string): Promise<Array<{ id: string; agent: string; text: string; pushedTo: string[] }>>;
  /** Remember that an approval reached an owner's handle (a restart does not push it there again). */
  markPushed(approvalId: string, channel: string, handle: string): Promise<void>;
  decide(approvalId: string, decision: 'approve' | 'reject', person: { id: string; name: string }): Promise<string>;
}

/**
 * Lessons waiting for the owner, with their whole text, for a channel to
 * push with buttons; a press decides as the person who pressed, who must be
 * an owner (approveLesson and rejectApproval refuse anyone else).
 */
export function createApprovalDesk(database: Database, audit: AuditLog, directory: AgentNames): ApprovalDesk {
  return {
    async pending(channel) {
      const approvals = await listApprovals(database, { status: 'pending' });
      if (approvals.length === 0) return [];
      const agents = await directory.listAgents({ includeArchived: true });
      const pushes = await database.adminScope('gateway: read where approvals were pushed', async (tx) => {
        const { rows } = await tx.query<{ approval_id: string; external_id: string }>('select approval_id, external_id from approval_pushes where channel = $1 and approval_id = any($2::uuid[])', [
          channel,
          approvals.map((approval) => approval.id),
        ]);
        return rows;
      });
      return approvals.map((approval) => ({
        id: approval.id,
        agent: agents.find((agent) => agent.id === approval.agentId)?.name ?? 'An agent',
        text: approval.text,
        pushedTo: pushes.filter((push) => push.approval_id === approval.id).map((push) => push.external_id),
      }));
    },
    async markPushed(approvalId, channel, handle) {
      await database.adminScope('gateway: record an approval as pushed', (tx) =>
        tx.query('insert into approval_pushes (approval_id, channel, external_id) values ($1, $2, $3) on conflict do nothing', [approvalId, channel, handle]),
      );
    },
    async decide(approvalId, decision, person) {
      if (decision === 'approve') {
        const lesson = await approveLesson(database, audit, approvalId, { kind: 'person', personId: person.id });
        const agent = await directory.agentById(lesson.agentId);
        return `Approved by ${person.name}: the lesson now rides in every prompt of ${agent.name}.`;
      }
      await rejectApproval(database, approvalId, { kind: 'person', personId: person.id });
      return `Rejected by ${person.name}.`;
    },
  };
}
