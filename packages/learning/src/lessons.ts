import type { Database, Transaction } from '@roster/db';
import { RosterError } from '@roster/errors';
import { containsSecret, contentHash, isNearDuplicate, minhash, type AuditLog } from '@roster/memory';
import { currentJob } from './actor.js';
import { approvalColumns, type ApprovalRow, type Approver } from './approvals.js';

export interface Lesson {
  id: string;
  agentId: string;
  text: string;
  status: 'active' | 'retired';
  /** How many times this text has been approved for the agent (1 the first time). */
  version: number;
  /** The person who approved it: their id, and their name as it is now. */
  approvedBy: string;
  approverName: string;
  approvedAt: Date;
  retiredAt: Date | null;
  retiredReason: string | null;
  approvalId: string | null;
  evidence: unknown[];
}

/** Deciding what rides in an agent's prompts is the owner's: a member or guest cannot. */
async function refuseUnlessOwner(tx: Transaction, approver: Approver): Promise<{ name: string }> {
  const { rows } = await tx.query<{ role: string; name: string }>('select role, name from people where id = $1 and erased_at is null', [approver.personId]);
  const person = rows[0];
  if (person === undefined) throw new RosterError('person_not_found', 'The approver is not a known person.');
  if (person.role !== 'owner') throw new RosterError('owner_required', `${person.name} is a ${person.role}: only an owner approves, rejects or retires lessons.`);
  return { name: person.name };
}

function refuseWithoutPerson(approver: Approver | undefined): asserts approver is Approver {
  const job = currentJob();
  if (job !== undefined) {
    throw new RosterError('approval_from_job', `Only a person can decide on a lesson; the job "${job}" cannot approve, reject or retire one.`);
  }
  if (approver === undefined || approver.kind !== 'person' || typeof approver.personId !== 'string') {
    throw new RosterError('approval_needs_person', 'Only a person can decide on a lesson: say who approves it.');
  }
}

/**
 * Why a lesson text cannot become a lesson, or null: 20–4,000 characters, no
 * secret, not a retired lesson's text, not a duplicate of an active one.
 */
export async function lessonTextProblem(tx: Transaction, agentId: string, text: string): Promise<string | null> {
  const length = [...text].length;
  if (length < 20 || length > 4000) return `a lesson is 20 to 4,000 characters; this one is ${length}`;
  if (containsSecret(text)) return 'the text holds a secret';
  const hash = contentHash(text);
  const signature = minhash(text);
  const { rows } = await tx.query<{ status: string; text_hash: string; minhash: string[]; text: string }>(
    'select status, text_hash, minhash, text from lessons where agent_id = $1',
    [agentId],
  );
  for (const row of rows) {
    const same = row.text_hash === hash || isNearDuplicate(signature, row.minhash.length > 0 ? row.minhash.map(Number) : minhash(row.text));
    if (same && row.status === 'retired') return 'a lesson with this text was retired; it cannot be promoted again';
    if (same && row.status === 'active') return 'an active lesson already says this';
  }
  return null;
}

/** A person approves a pending lesson, having seen its whole text: it becomes active, with its evidence. */
export async function approveLesson(database: Database, audit: AuditLog, approvalId: string, approver: Approver): Promise<Lesson> {
  refuseWithoutPerson(approver);
  return database.adminScope('approvals: a person approves a lesson', async (tx) => {
    const { rows } = await tx.query<ApprovalRow>(`select ${approvalColumns} from approvals where id::text = $1 for update`, [approvalId]);
    const approval = rows[0];
    if (approval === undefined) throw new RosterError('approval_not_found', `No approval ${approvalId}.`);
    if (approval.status !== 'pending') throw new RosterError('approval_decided', `That approval was already ${approval.status}.`);
    const { name: approverName } = await refuseUnlessOwner(tx, approver);
    const problem = await lessonTextProblem(tx, approval.agent_id, approval.text);
    if (problem !== null) throw new RosterError('lesson_invalid', `Cannot promote this lesson: ${problem}.`);
    await tx.query(`update approvals set status = 'approved', decided_by = $2, decided_at = now() where id = $1`, [approval.id, approver.personId]);
    const hash = contentHash(approval.text);
    const version = await tx.query<{ n: string }>('select count(*) as n from lessons where agent_id = $1 and text_hash = $2', [approval.agent_id, hash]);
    const inserted = await tx.query<{ id: string; version: number; approved_at: Date }>(
      `insert into lessons (agent_id, person_id, text, text_hash, minhash, evidence, approval_id, approved_by, version)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9) returning id, version, approved_at`,
      [approval.agent_id, approval.person_id, approval.text, hash, minhash(approval.text), JSON.stringify(approval.evidence), approval.id, approver.personId, Number(version.rows[0]!.n) + 1],
    );
    const lesson = inserted.rows[0]!;
    await audit.append(tx, {
      agentId: approval.agent_id,
      personId: approver.personId,
      actor: { kind: 'person', id: approver.personId },
      action: 'lesson-approve',
      targetKind: 'lesson',
      targetId: lesson.id,
      detail: { approval: approval.id, version: lesson.version, evidence: approval.evidence.length },
    });
    return {
      id: lesson.id,
      agentId: approval.agent_id,
      text: approval.text,
      status: 'active',
      version: lesson.version,
      approvedBy: approver.personId,
      approverName,
      approvedAt: lesson.approved_at,
      retiredAt: null,
      retiredReason: null,
      approvalId: approval.id,
      evidence: approval.evidence,
    };
  });
}

export async function rejectApproval(database: Database, approvalId: string, approver: Approver): Promise<void> {
  refuseWithoutPerson(approver);
  await database.adminScope('approvals: a person rejects a lesson', async (tx) => {
    await refuseUnlessOwner(tx, approver);
    const { rowCount } = await tx.query(`update approvals set status = 'rejected', decided_by = $2, decided_at = now() where id::text = $1 and status = 'pending'`, [
      approvalId,
      approver.personId,
    ]);
    if (rowCount === 0) throw new RosterError('approval_not_found', `No pending approval ${approvalId}.`);
  });
}

/** A person retires a lesson with a reason; its text cannot be promoted again. */
export async function retireLesson(database: Database, audit: AuditLog, lessonId: string, reason: string, approver: Approver): Promise<void> {
  refuseWithoutPerson(approver);
  if (reason.trim() === '') throw new RosterError('reason_missing', 'Say why the lesson is retired.');
  await database.adminScope('approvals: a person retires a lesson', async (tx) => {
    await refuseUnlessOwner(tx, approver);
    const { rows } = await tx.query<{ id: string; agent_id: string }>(
      `update lessons set status = 'retired', retired_at = now(), retired_reason = $2 where id::text = $1 and status = 'active' returning id, agent_id`,
      [lessonId, reason.slice(0, 1000)],
    );
    const lesson = rows[0];
    if (lesson === undefined) throw new RosterError('lesson_not_found', `No active lesson ${lessonId}.`);
    await audit.append(tx, {
      agentId: lesson.agent_id,
      personId: approver.personId,
      actor: { kind: 'person', id: approver.personId },
      action: 'lesson-retire',
      targetKind: 'lesson',
      targetId: lesson.id,
      detail: { reason: reason.slice(0, 200) },
    });
  });
}

export async function listLessons(database: Database, agentId: string): Promise<Lesson[]> {
  return database.adminScope('owner: list lessons', async (tx) => {
    const { rows } = await tx.query<{
      id: string;
      agent_id: string;
      text: string;
      status: Lesson['status'];
      version: number;
      approved_by: string;
      approver_name: string;
      approved_at: Date;
      retired_at: Date | null;
      retired_reason: string | null;
      approval_id: string | null;
      evidence: unknown[];
    }>(
      `select l.id, l.agent_id, l.text, l.status, l.version, l.approved_by, coalesce(p.name, 'a person since erased') as approver_name, l.approved_at, l.retired_at, l.retired_reason, l.approval_id, l.evidence
         from lessons l join people p on p.id = l.approved_by
        where l.agent_id = $1 order by l.approved_at`,
      [agentId],
    );
    return rows.map((row) => ({
      id: row.id,
      agentId: row.agent_id,
      text: row.text,
      status: row.status,
      version: row.version,
      approvedBy: row.approved_by,
      approverName: row.approver_name,
      approvedAt: row.approved_at,
      retiredAt: row.retired_at,
      retiredReason: row.retired_reason,
      approvalId: row.approval_id,
      evidence: row.evidence,
    }));
  });
}
