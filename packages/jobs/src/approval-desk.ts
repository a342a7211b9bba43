import type { Directory, Person } from '@roster/core';
import type { Database } from '@roster/db';
import type { AuditLog } from '@roster/memory';
import { approveLesson, listApprovals, rejectApproval } from './lessons.js';

/** The owner's pending lessons as a channel shows them, and the decisions pressed there. */
export interface ApprovalDesk {
  pending(): Promise<Array<{ id: string; agent: string; text: string }>>;
  decide(approvalId: string, decision: 'approve' | 'reject', person: Person): Promise<string>;
}

/**
 * Lessons waiting for the owner, with their whole text, for a channel to
 * push with buttons; a press decides as the person who pressed, who must be
 * an owner (approveLesson and rejectApproval refuse anyone else).
 */
export function createApprovalDesk(database: Database, audit: AuditLog, directory: Directory): ApprovalDesk {
  return {
    async pending() {
      const approvals = await listApprovals(database, { status: 'pending' });
      if (approvals.length === 0) return [];
      const agents = await directory.listAgents({ includeArchived: true });
      return approvals.map((approval) => ({ id: approval.id, agent: agents.find((agent) => agent.id === approval.agentId)?.name ?? 'An agent', text: approval.text }));
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
