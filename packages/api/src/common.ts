import { z } from 'zod';

/** Times travel as ISO 8601 strings. */
export const time = z.iso.datetime();

export const trustSchema = z.enum(['candidate', 'active', 'verified', 'disputed', 'retracted', 'rejected', 'faded', 'forgotten']);

export const personSchema = z.object({ id: z.uuid(), name: z.string(), role: z.enum(['owner', 'member', 'guest']) });
export const personRefSchema = z.object({ id: z.uuid(), name: z.string() });

export const agentSchema = z.object({
  id: z.uuid(),
  name: z.string(),
  job: z.string(),
  engine: z.string(),
  status: z.enum(['active', 'archived', 'purged']),
  createdAt: time,
});

export const provenanceSchema = z.object({
  actorKind: z.string(),
  actorId: z.string().nullable(),
  channel: z.string().nullable(),
  tool: z.string().nullable(),
  sourceMessageIds: z.array(z.string()),
});

export const factSchema = z.object({
  id: z.uuid(),
  content: z.string().nullable().describe('null once forgotten'),
  trust: trustSchema,
  category: z.string(),
  audience: z.enum(['private', 'agent']),
  validFrom: time,
  validTo: time.nullable(),
  recordedAt: time,
  supersededAt: time.nullable(),
  uses: z.number().int(),
  lastUsedAt: time.nullable(),
  provenance: provenanceSchema,
});

/** A message a fact was drawn from, as the reader may see it. */
export const sourceMessageSchema = z.object({
  id: z.uuid(),
  channel: z.string().describe('The door it came through: web, telegram, …'),
  role: z.enum(['person', 'agent', 'system', 'tool']),
  person: personRefSchema.nullable().describe('Who said it, or to whom an agent answered it.'),
  agent: z.string().nullable(),
  at: time,
  forgotten: z.boolean(),
  own: z.boolean().describe('The reader’s own line: only then are its words given.'),
  text: z.string().nullable().describe('The words: only of the reader’s own lines, and null once forgotten.'),
});

export const okSchema = z.object({ ok: z.literal(true) });

/** The errors' one shape. */
export const errorSchema = z.object({
  error: z.object({
    code: z.string().describe('A stable, machine-readable code, like agent_not_found or csrf_failed.'),
    message: z.string().describe('What happened and what to do, for a person.'),
  }),
});

export type Person = z.output<typeof personSchema>;
export type PersonRef = z.output<typeof personRefSchema>;
export type Agent = z.output<typeof agentSchema>;
export type Provenance = z.output<typeof provenanceSchema>;
export type Fact = z.output<typeof factSchema>;
export type SourceMessage = z.output<typeof sourceMessageSchema>;
export type ErrorBody = z.output<typeof errorSchema>;
