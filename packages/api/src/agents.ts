import { z } from 'zod';

/** An engine in use or configured, and whether it can run as configured. */
export const engineChoiceSchema = z.object({ reference: z.string(), label: z.string(), configured: z.boolean(), detail: z.string() });

export const purgeResultSchema = z.object({ facts: z.number().int(), erased: z.record(z.string(), z.number()) });

export const engineTestSchema = z.object({ ok: z.boolean(), detail: z.string() });

export type EngineChoice = z.output<typeof engineChoiceSchema>;
export type PurgeResult = z.output<typeof purgeResultSchema>;
export type EngineTest = z.output<typeof engineTestSchema>;
