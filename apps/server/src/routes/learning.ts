import { approvalSchema, evidenceSchema, lessonSchema, mirrorReportSchema } from '@roster/api';
import { approveLesson, canJudge, listApprovals, listLessons, mirrorReport, passRateByDay, readEvidence, rejectApproval, retireLesson, type Approval, type EvidenceEntry, type Lesson } from '@roster/learning';
import type { Database } from '@roster/db';
import { z } from 'zod';
import type { RouteContext } from '../context.js';
import { nameParam, okSchema, uuidParam } from '../schemas.js';

/** One piece of evidence, resolved to its learning event and message, in the API's shape. */
function showEvidence(entry: EvidenceEntry): z.infer<typeof evidenceSchema> {
  return {
    eventId: entry.eventId,
    messageId: entry.messageId,
    personId: entry.personId,
    person: entry.person,
    kind: entry.kind,
    ...(entry.note === undefined ? {} : { text: entry.note }),
    ...(entry.paraphrased === true ? { paraphrased: true } : {}),
    message: entry.message === null ? null : { ...entry.message, at: entry.message.at.toISOString() },
  };
}

async function showLesson(database: Database, lesson: Lesson): Promise<z.infer<typeof lessonSchema>> {
  return {
    id: lesson.id,
    text: lesson.text,
    status: lesson.status,
    version: lesson.version,
    approvedBy: lesson.approvedBy,
    approver: { id: lesson.approvedBy, name: lesson.approverName },
    approvedAt: lesson.approvedAt.toISOString(),
    retiredAt: lesson.retiredAt === null ? null : lesson.retiredAt.toISOString(),
    retiredReason: lesson.retiredReason,
    approvalId: lesson.approvalId,
    evidence: (await readEvidence(database, lesson.agentId, lesson.evidence)).map(showEvidence),
  };
}

const iso = (date: Date | null) => (date === null ? null : new Date(date).toISOString());

/**
 * The learning loop, the owner's: lessons agents proposed or review found
 * wait for a person (only an owner decides), the lessons in force, and the
 * mirror's measure of what was learned.
 */
export function learningRoutes({ routes, runtime, database }: RouteContext): void {
  const { directory } = runtime.core;
  const agentParams = z.object({ name: nameParam });

  routes.add({
    method: 'GET',
    url: '/api/approvals',
    summary: 'Lessons waiting for a person (status=all: decided ones too), with their whole text and evidence: each learning event with the message it came from (door, time, words unless forgotten) and whose it was.',
    access: 'owner',
    query: z.object({ status: z.enum(['pending', 'all']).optional(), agent: nameParam.optional() }),
    response: { status: 200, schema: z.object({ approvals: z.array(approvalSchema) }) },
    errors: [404],
    async handle({ query }) {
      const agentId = query.agent === undefined ? undefined : (await directory.agentByName(query.agent)).id;
      const approvals = await listApprovals(database, { ...(agentId === undefined ? {} : { agentId }), ...(query.status === 'all' ? {} : { status: 'pending' as const }) });
      const agents = await directory.listAgents({ includeArchived: true });
      const nameOf = (approval: Approval) => agents.find((agent) => agent.id === approval.agentId)?.name ?? approval.agentId;
      const shown = [];
      for (const approval of approvals) {
        shown.push({
          id: approval.id,
          agent: nameOf(approval),
          text: approval.text,
          evidence: (await readEvidence(database, approval.agentId, approval.evidence)).map(showEvidence),
          proposedByKind: approval.proposedByKind,
          proposedBy: approval.proposedBy,
          status: approval.status,
          createdAt: new Date(approval.createdAt).toISOString(),
        });
      }
      return { approvals: shown };
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/approvals/:id/approve',
    summary: 'Approve a pending lesson: it rides in every later prompt of its agent.',
    access: 'owner',
    params: z.object({ id: uuidParam }),
    response: { status: 200, schema: z.object({ lesson: lessonSchema }) },
    errors: [404, 409],
    async handle({ params, viewer }) {
      const lesson = await approveLesson(database, runtime.memory.audit, params.id, { kind: 'person', personId: viewer.person.id });
      return { lesson: await showLesson(database, lesson) };
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/approvals/:id/reject',
    summary: 'Reject a pending lesson.',
    access: 'owner',
    params: z.object({ id: uuidParam }),
    response: { status: 200, schema: okSchema },
    errors: [404],
    async handle({ params, viewer }) {
      await rejectApproval(database, params.id, { kind: 'person', personId: viewer.person.id });
      return { ok: true };
    },
  });

  routes.add({
    method: 'GET',
    url: '/api/agents/:name/lessons',
    summary: 'An agent’s lessons, active and retired, each with its version, who approved it and when, and its evidence.',
    access: 'owner',
    params: agentParams,
    response: { status: 200, schema: z.object({ lessons: z.array(lessonSchema) }) },
    errors: [404],
    async handle({ params }) {
      const agent = await directory.agentByName(params.name);
      const lessons = [];
      for (const lesson of await listLessons(database, agent.id)) lessons.push(await showLesson(database, lesson));
      return { lessons };
    },
  });

  routes.add({
    method: 'POST',
    url: '/api/lessons/:id/retire',
    summary: 'Retire a lesson, saying why; its text cannot be promoted again.',
    access: 'owner',
    params: z.object({ id: uuidParam }),
    body: z.object({ reason: z.string().trim().min(1).max(1000) }),
    response: { status: 200, schema: okSchema },
    errors: [404],
    async handle({ params, body, viewer }) {
      await retireLesson(database, runtime.memory.audit, params.id, body.reason, { kind: 'person', personId: viewer.person.id });
      return { ok: true };
    },
  });

  routes.add({
    method: 'GET',
    url: '/api/agents/:name/mirror',
    summary: '“N of M corrections no longer repeated”: each case with its history, and the pass rate per day for a chart.',
    access: 'owner',
    params: agentParams,
    response: { status: 200, schema: mirrorReportSchema },
    errors: [404],
    async handle({ params }) {
      const agent = await directory.agentByName(params.name);
      const report = await mirrorReport(database, agent.id, { judged: canJudge(runtime.judgeFor(agent)) });
      return {
        agent: agent.name,
        judged: report.judged,
        learned: report.learned,
        total: report.total,
        summary: report.summary,
        cases: report.cases.map((item) => ({
          id: item.id,
          personId: item.personId,
          text: item.text,
          status: item.status,
          streak: item.streak,
          runs: item.runs,
          lastRunAt: iso(item.lastRunAt),
          graduatedAt: iso(item.graduatedAt),
          nextCheckAt: iso(item.nextCheckAt),
          history: item.history.map((run) => ({ verdict: run.verdict, reason: run.reason, ranAt: new Date(run.ranAt).toISOString(), lessonsShown: run.lessonsShown })),
        })),
        passRate: passRateByDay(report),
      };
    },
  });
}
