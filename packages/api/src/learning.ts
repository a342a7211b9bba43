import { z } from 'zod';
import { time } from './common.js';

export const evidenceSchema = z.object({
  eventId: z.string().nullable(),
  messageId: z.string().nullable(),
  personId: z.string().nullable(),
  person: z.string().nullable().describe('The name of the person whose statement it was.'),
  kind: z.string(),
  text: z.string().optional().describe('An agent’s note on why it proposed the lesson.'),
  paraphrased: z.boolean().optional(),
  message: z
    .object({
      channel: z.string().nullable().describe('The door it came through: web, telegram, …'),
      at: time,
      text: z.string().nullable().describe('The words; null once forgotten.'),
      forgotten: z.boolean(),
    })
    .nullable()
    .describe('The message the learning event came from; null when it is not kept.'),
});

export const approvalSchema = z.object({
  id: z.uuid(),
  agent: z.string(),
  text: z.string(),
  evidence: z.array(evidenceSchema),
  proposedByKind: z.enum(['agent', 'job', 'person']),
  proposedBy: z.string().nullable(),
  status: z.enum(['pending', 'approved', 'rejected']),
  createdAt: time,
});

export const lessonSchema = z.object({
  id: z.uuid(),
  text: z.string(),
  status: z.enum(['active', 'retired']),
  version: z.number().int().describe('How many times this text was approved for the agent.'),
  approvedBy: z.string(),
  approver: z.object({ id: z.string(), name: z.string() }).describe('Who approved it.'),
  approvedAt: time,
  retiredAt: time.nullable(),
  retiredReason: z.string().nullable(),
  approvalId: z.string().nullable(),
  evidence: z.array(evidenceSchema),
});

export const mirrorRunSchema = z.object({ verdict: z.string(), reason: z.string(), ranAt: time, lessonsShown: z.unknown() });

export const mirrorCaseSchema = z.object({
  id: z.uuid(),
  personId: z.string().nullable(),
  text: z.string(),
  status: z.enum(['active', 'graduated']),
  streak: z.number().int(),
  runs: z.number().int(),
  lastRunAt: time.nullable(),
  graduatedAt: time.nullable(),
  nextCheckAt: time.nullable(),
  history: z.array(mirrorRunSchema),
});

export const mirrorReportSchema = z.object({
  agent: z.string(),
  judged: z.boolean(),
  learned: z.number().int(),
  total: z.number().int(),
  summary: z.string(),
  cases: z.array(mirrorCaseSchema),
  passRate: z.array(z.object({ date: z.iso.date(), passed: z.number().int(), failed: z.number().int() })),
});

export type Evidence = z.output<typeof evidenceSchema>;
export type Approval = z.output<typeof approvalSchema>;
export type Lesson = z.output<typeof lessonSchema>;
export type MirrorRun = z.output<typeof mirrorRunSchema>;
export type MirrorCase = z.output<typeof mirrorCaseSchema>;
export type MirrorReport = z.output<typeof mirrorReportSchema>;
