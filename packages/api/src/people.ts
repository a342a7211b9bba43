import { z } from 'zod';
import { personSchema, time } from './common.js';

export const meSchema = z.object({
  person: personSchema,
  csrfToken: z.string().nullable().describe('Send it as x-csrf-token with every change made with the session cookie; null for a bearer token.'),
});

export const tokenInfoSchema = z.object({ id: z.uuid(), name: z.string(), createdAt: time, lastUsedAt: time.nullable(), expiresAt: time.nullable() });
export const createdTokenSchema = tokenInfoSchema.extend({ token: z.string().describe('rst_…: send it as Authorization: Bearer rst_…') });

export const identitySchema = z.object({ channel: z.string(), externalId: z.string(), displayName: z.string().nullable() });
export const personWithIdentitiesSchema = personSchema.extend({ identities: z.array(identitySchema) });

export const auditEventSchema = z.object({
  id: z.uuid(),
  agent: z.string(),
  seq: z.number().int(),
  personId: z.string().nullable(),
  actorKind: z.string(),
  actorId: z.string().nullable(),
  action: z.string(),
  targetKind: z.string(),
  targetId: z.string().nullable(),
  detail: z.record(z.string(), z.unknown()),
  occurredAt: time,
  hash: z.string(),
});

export const chainReportSchema = z.object({
  agent: z.string(),
  agentId: z.uuid(),
  events: z.number().int(),
  ok: z.boolean(),
  broken: z.object({ seq: z.number().int(), id: z.string().nullable(), problem: z.string() }).nullable(),
});

export const auditVerifySchema = z.object({ ok: z.boolean(), chains: z.array(chainReportSchema) });

export type Me = z.output<typeof meSchema>;
export type ApiToken = z.output<typeof tokenInfoSchema>;
export type CreatedToken = z.output<typeof createdTokenSchema>;
export type PersonWithIdentities = z.output<typeof personWithIdentitiesSchema>;
export type AuditEvent = z.output<typeof auditEventSchema>;
export type ChainReport = z.output<typeof chainReportSchema>;
