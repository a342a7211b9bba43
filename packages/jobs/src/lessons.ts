import { isUuid, type Database, type Transaction } from '@roster/db';
import { RosterError } from '@roster/errors';
import { containsSecret, contentHash, isNearDuplicate, minhash, type AuditLog } from '@roster/memory';
import { currentJob } from './job-context.js';

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

/**
 * One piece of a lesson's evidence, as the owner judges it: the learning
 * event (or the agent's note) and the message it came from.
 */
export interface EvidenceEntry {
  eventId: string | null;
  messageId: string | null;
  /** Whose statement it was, and their name. */
  personId: string | null;
  person: string | null;
  kind: string;
  /** An agent's note on why it proposed the lesson. */
  note?: string;
  /** The lesson paraphrases several people's statements. */
  paraphrased?: boolean;
  /**
   * Where and when it was said, and the words; null when neither the message
   * nor the learning event is kept. `text` is null once forgotten.
   */
  message: { channel: string | null; at: Date; text: string | null; forgotten: boolean } | null;
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

const approvalColumns = 'id, agent_id, person_id, text, evidence, confidence, status, proposed_by_kind, proposed_by, created_at';
interface ApprovalRow {
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

export async function listApprovals(database: Database, options: { agentId?: string; status?: Approval['status'] } = {}): Promise<Approval[]> {
  return database.adminScope('owner: list approvals', async (tx) => {
    const { rows } = await tx.query<ApprovalRow>(
      `select ${approvalColumns} from approvals where ($1::uuid is null or agent_id = $1) and ($2::text is null or status = $2) order by created_at`,
      [options.agentId ?? null, options.status ?? null],
    );
    return rows.map(toApproval);
  });
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

const textOf = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/**
 * A lesson's or an approval's evidence, as the owner reads it to decide:
 * each learning event with the message it came from (the door, the time,
 * the words unless forgotten) and whose it was. Only the agent's own events
 * are read; what a forget erased shows as forgotten, without words.
 */
export async function readEvidence(database: Database, agentId: string, evidence: readonly unknown[]): Promise<EvidenceEntry[]> {
  const entries = evidence.map((entry) => {
    const item = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>;
    const note = textOf(item.note);
    return {
      eventId: textOf(item.eventId),
      messageId: textOf(item.messageId),
      personId: textOf(item.personId),
      kind: textOf(item.kind) ?? (note === null ? 'unknown' : 'note'),
      ...(note === null ? {} : { note }),
      ...(item.paraphrased === true ? { paraphrased: true } : {}),
    };
  });
  const eventIds = entries.map((entry) => entry.eventId).filter(isUuid);
  const messageIds = entries.map((entry) => entry.messageId).filter(isUuid);
  if (eventIds.length === 0 && messageIds.length === 0 && entries.every((entry) => entry.personId === null)) {
    return entries.map((entry) => ({ ...entry, person: null, message: null }));
  }
  return database.adminScope('owner: read the evidence of a lesson', async (tx) => {
    const events = await tx.query<{ id: string; message_id: string | null; person_id: string | null; channel: string | null; text: string; created_at: Date }>(
      'select id, message_id, person_id, channel, text, created_at from learning_events where agent_id = $1 and id = any($2::uuid[])',
      [agentId, eventIds],
    );
    const eventById = new Map(events.rows.map((row) => [row.id, row] as const));
    const wanted = [...messageIds, ...events.rows.flatMap((row) => (row.message_id === null ? [] : [row.message_id]))];
    const messages = await tx.query<{ id: string; channel: string; person_id: string | null; content: string; forgotten: boolean; created_at: Date }>(
      `select m.id, c.channel, m.person_id, m.content, m.forgotten_at is not null as forgotten, m.created_at
         from messages m join conversations c on c.id = m.conversation_id where m.id = any($1::uuid[])`,
      [wanted],
    );
    const messageById = new Map(messages.rows.map((row) => [row.id, row] as const));
    const personIds = [...new Set([...entries.map((entry) => entry.personId), ...events.rows.map((row) => row.person_id)].filter(isUuid))];
    const people = await tx.query<{ id: string; name: string }>('select id, name from people where id = any($1::uuid[])', [personIds]);
    const nameOf = new Map(people.rows.map((row) => [row.id, row.name] as const));
    return entries.map((entry): EvidenceEntry => {
      const event = entry.eventId === null ? undefined : eventById.get(entry.eventId);
      const messageId = entry.messageId ?? event?.message_id ?? null;
      const message = messageId === null ? undefined : messageById.get(messageId);
      const personId = entry.personId ?? event?.person_id ?? message?.person_id ?? null;
      const said =
        message !== undefined
          ? { channel: message.channel, at: message.created_at, text: message.forgotten || message.content === '' ? null : message.content, forgotten: message.forgotten }
          : event !== undefined
            ? { channel: event.channel, at: event.created_at, text: event.text === '' ? null : event.text, forgotten: event.text === '' }
            : null;
      return { ...entry, personId, person: personId === null ? null : (nameOf.get(personId) ?? null), message: said };
    });
  });
}
