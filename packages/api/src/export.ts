import { z } from 'zod';
import { time, trustSchema as trust } from './common.js';

/** One version of a fact as a person's export carries it: its words (unless forgotten), its times and its provenance. */
export const exportedFactVersionSchema = z.object({
  id: z.uuid(),
  content: z.string().nullable().describe('null once forgotten'),
  forgotten: z.boolean(),
  audience: z.enum(['private', 'agent']).describe('private: for the person alone; agent: something they told the agent for everyone it talks to.'),
  category: z.string(),
  trust,
  validFrom: time,
  validTo: time.nullable(),
  recordedAt: time,
  supersededAt: time.nullable(),
  supersededBy: z.uuid().nullable().describe('The version an update or a correction wrote after this one.'),
  restates: z.uuid().nullable(),
  restatedAs: z.uuid().nullable(),
  uses: z.number().int(),
  lastUsedAt: time.nullable(),
  provenance: z.object({
    actorKind: z.string(),
    actorId: z.string().nullable(),
    channel: z.string().nullable(),
    tool: z.string().nullable(),
    untrustedInput: z.boolean(),
    sourceMessageIds: z.array(z.string()),
  }),
});

/** The person export's layout; the CLI's `roster person export` writes the same. */
export const personExportSchema = z.object({
  format: z.literal('roster-person-export'),
  formatVersion: z.number().int().describe('Raised when a field changes meaning or goes.'),
  exportedAt: time,
  person: z.object({ id: z.uuid(), name: z.string(), role: z.enum(['owner', 'member', 'guest']) }),
  facts: z.array(z.object({ agent: z.string(), agentId: z.uuid(), versions: z.array(exportedFactVersionSchema).describe('Every version of the fact, oldest first.') })),
  messages: z.array(
    z.object({
      id: z.uuid(),
      agent: z.string().nullable(),
      role: z.string(),
      channel: z.string().nullable(),
      conversationId: z.uuid(),
      content: z.string().nullable().describe('null once erased by a forget'),
      forgotten: z.boolean(),
      createdAt: time,
    }),
  ),
  identities: z.array(z.object({ id: z.uuid(), channel: z.string(), externalId: z.string(), displayName: z.string().nullable(), createdAt: time, unreachableAt: time.nullable() })),
  learningEvents: z.array(
    z.object({ id: z.uuid(), agent: z.string(), kind: z.string(), text: z.string(), channel: z.string().nullable(), messageId: z.string().nullable(), createdAt: time, harvestedAt: time.nullable() }),
  ),
  lessons: z.array(
    z.object({
      id: z.uuid(),
      agent: z.string(),
      text: z.string(),
      status: z.string(),
      version: z.number().int(),
      approvedAt: time,
      retiredAt: time.nullable(),
      evidence: z
        .array(
          z.union([
            z.object({ yours: z.literal(true), kind: z.string().nullable(), eventId: z.string().nullable(), messageId: z.string().nullable(), note: z.string().nullable() }),
            z.object({ yours: z.literal(false), kind: z.string().nullable() }),
          ]),
        )
        .describe('Each piece says whether it is yours; another person’s is only counted, with its kind.'),
    }),
  ),
  sessions: z.array(z.object({ id: z.uuid(), createdAt: time, expiresAt: time, lastSeenAt: time })),
  apiTokens: z.array(z.object({ id: z.uuid(), name: z.string(), createdAt: time, expiresAt: time.nullable(), lastUsedAt: time.nullable() })),
});

export type PersonExport = z.output<typeof personExportSchema>;
