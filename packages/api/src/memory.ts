import { z } from 'zod';
import { factSchema, personRefSchema, provenanceSchema, sourceMessageSchema, time, trustSchema } from './common.js';

/** A fact as the memory listing gives it: its provenance also names the messages it came from. */
export const listedFactSchema = factSchema.extend({
  provenance: provenanceSchema.extend({
    sources: z.array(sourceMessageSchema).describe('The messages it was drawn from: door, time, who; the words only of the reader’s own lines, and none once forgotten.'),
  }),
});

/** A forgotten fact where it was: when it was forgotten and who asked, never a word of it. */
export const tombstoneSchema = z.object({
  id: z.uuid(),
  factId: z.uuid().nullable().describe('The forgotten version (its history stays readable, without content).'),
  forgottenAt: time,
  forgottenBy: z
    .object({ kind: z.string(), id: z.string().nullable(), name: z.string().nullable().describe('The person’s name when a person (or the owner) asked.') })
    .nullable()
    .describe('Who asked to forget it, from the audit log.'),
});

/** One person's facts with an agent (person null: agent-wide), and what was forgotten there. */
export const factGroupSchema = z.object({
  person: personRefSchema.nullable(),
  facts: z.array(listedFactSchema),
  tombstones: z.array(tombstoneSchema).describe('What was forgotten here (by the time read), newest first: when, and who asked.'),
});

export const memoryListingSchema = z.object({ groups: z.array(factGroupSchema) });

/** One version of a fact in its history, and the audit event that recorded it. */
export const factVersionSchema = z.object({
  fact: factSchema,
  relation: z.enum(['earlier', 'this', 'later']),
  event: z.object({ id: z.uuid(), action: z.string(), actorKind: z.string(), actorId: z.string().nullable(), occurredAt: time }).nullable(),
});

export const factHistorySchema = z.object({ versions: z.array(factVersionSchema) });

export const forgetResultSchema = z.object({
  fact: factSchema,
  tombstone: tombstoneSchema.describe('What the memory listing shows in its place from now on.'),
  erased: z.record(z.string(), z.number()),
});

/** A fact the prompt carried, and why search chose it, in words a page can show. */
export const memoryUsedSchema = z.object({
  id: z.uuid(),
  content: z.string().nullable(),
  trust: trustSchema,
  why: z.string().describe('Why search chose it: which arms matched, at what rank, and its weights.'),
});

export type ListedFact = z.output<typeof listedFactSchema>;
export type Tombstone = z.output<typeof tombstoneSchema>;
export type FactGroup = z.output<typeof factGroupSchema>;
export type FactVersion = z.output<typeof factVersionSchema>;
export type ForgetResult = z.output<typeof forgetResultSchema>;
export type MemoryUsed = z.output<typeof memoryUsedSchema>;
