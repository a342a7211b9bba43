import { z } from 'zod';
import { time } from './common.js';
import { memoryUsedSchema } from './memory.js';

/** One line of the person's own conversation, as /api/chat/history gives it. */
export const transcriptLineSchema = z.object({ id: z.uuid(), role: z.enum(['person', 'agent', 'system']), agent: z.string().nullable(), text: z.string(), forgotten: z.boolean(), at: time });

export const chatHistorySchema = z.object({ conversationId: z.uuid().nullable(), messages: z.array(transcriptLineSchema) });

export const toolCallSchema = z.object({ toolName: z.string(), input: z.unknown(), output: z.unknown() });

/** The data of a chat stream's `turn-end` event: one agent's whole reply, the tools it called and the memories its prompt carried. */
export const turnEndSchema = z.object({ agent: z.string(), text: z.string(), toolCalls: z.array(toolCallSchema), memories: z.array(memoryUsedSchema) });

export type TranscriptLine = z.output<typeof transcriptLineSchema>;
export type ChatHistory = z.output<typeof chatHistorySchema>;
export type ChatToolCall = z.output<typeof toolCallSchema>;
export type TurnEnd = z.output<typeof turnEndSchema>;
