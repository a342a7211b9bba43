import { chatHistorySchema } from '@roster/api';
import { isUuid } from '@roster/db';
import type { InboundMessage, TurnResult } from '@roster/core';
import { validateText } from '@roster/memory';
import { z } from 'zod';
import type { RouteContext } from '../context.js';
import { ApiError, describeError } from '../errors.js';
import { nameParam, showMemoryUsed } from '../schemas.js';

/** Turns one person may have streaming at once; past it, 429. */
const maxStreamsPerPerson = 2;

const eventStreamDescription = [
  'Server-sent events:',
  '`text-delta` `{ agent, delta }` as each reply streams;',
  'then per agent `turn-end` `{ agent, text, toolCalls: [{ toolName, input, output }], memories: [{ id, content, trust, why }] }`;',
  '`notice` `{ text }` when Roster itself answers (no agent yet, an /agent switch);',
  'finally `done` `{ conversationId }` (with `duplicate: true` when a message with this `id` was received before, and nothing new is stored or answered); on a failure `error` `{ code, message }` instead.',
].join(' ');

/** One event of the stream, in the text/event-stream format. */
function event(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * Chat over server-sent events, through the one road: `core.handle` on the
 * web channel, as the person signed in, with the reply streamed part by
 * part. One conversation per person and mode (one agent, or the team),
 * unless a conversation id the person had before is given.
 */
export function chatRoutes({ routes, runtime, database, config, logger }: RouteContext): void {
  const { core } = runtime;
  const streams = new Map<string, number>();
  const log = logger.child({ component: 'server/chat' });

  routes.add({
    method: 'POST',
    url: '/api/chat',
    summary: 'Say something to an agent (or to the team) and read the replies as a stream of server-sent events.',
    access: 'person',
    body: z
      .object({
        agent: nameParam.optional(),
        team: z.literal(true).optional(),
        message: z.string().describe('At most 4,000 characters (longer: 413).'),
        conversation: z.uuid().optional().describe('A conversationId a done event gave before: continue that conversation.'),
        id: z
          .uuid()
          .optional()
          .describe('The client’s id for this message (an idempotency key): sent again after a lost answer, the message is not stored twice, and done says duplicate.'),
      })
      .refine((body) => !(body.agent !== undefined && body.team === true), 'agent or team, not both'),
    response: { status: 200, eventStream: eventStreamDescription },
    errors: [404, 413, 429],
    async handle({ body, viewer, reply }) {
      const person = viewer.person;
      // Refused before the stream opens, with a status: a message too long or empty, an unknown agent or conversation.
      const text = validateText(body.message, 'message');
      if (body.agent !== undefined) await core.directory.agentByName(body.agent);
      const team = body.team === true;
      let externalId = `${team ? 'team' : 'solo'}:${person.id}`;
      if (body.conversation !== undefined) externalId = await conversationOf(body.conversation, person.id);
      const open = streams.get(person.id) ?? 0;
      if (open >= maxStreamsPerPerson) throw new ApiError(429, 'rate_limited', `You have ${open} replies streaming already; wait for one to finish.`);
      streams.set(person.id, open + 1);

      const abort = new AbortController();
      reply.raw.on('close', () => {
        if (!reply.raw.writableFinished) abort.abort();
      });
      reply.hijack();
      reply.raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' });
      const send = (name: string, data: unknown) => {
        if (!reply.raw.destroyed) reply.raw.write(event(name, data));
      };
      const inbound: InboundMessage = {
        channel: 'web',
        conversation: { externalId, kind: 'dm' },
        sender: { personId: person.id },
        text,
        ...(body.id === undefined ? {} : { externalMessageId: `web:${body.id}` }),
      };
      try {
        const result: TurnResult = await core.handle(inbound, {
          ...(body.agent === undefined ? {} : { agent: body.agent }),
          team,
          signal: abort.signal,
          onPart: (agent, part) => {
            if (part.type === 'text-delta') send('text-delta', { agent, delta: part.text });
          },
        });
        if (result.notice !== null) send('notice', { text: result.notice });
        for (const answer of result.replies) {
          send('turn-end', {
            agent: answer.agent,
            text: answer.text,
            toolCalls: answer.toolCalls.map((call) => ({ toolName: call.toolName, input: call.input, output: call.output })),
            memories: answer.memories.map(showMemoryUsed),
          });
        }
        send('done', { conversationId: result.conversationId, ...(result.duplicate ? { duplicate: true } : {}) });
      } catch (error) {
        const { status, body: answer } = describeError(error, config.NODE_ENV === 'development');
        // A reader that hung up cut its own turn short: its message waits unanswered for the retry, nothing failed.
        if (status >= 500 && !abort.signal.aborted) log.error({ err: error }, 'a chat turn failed');
        send('error', answer.error);
      } finally {
        const left = (streams.get(person.id) ?? 1) - 1;
        if (left <= 0) streams.delete(person.id);
        else streams.set(person.id, left);
        reply.raw.end();
      }
      return undefined;
    },
  });

  routes.add({
    method: 'GET',
    url: '/api/chat/history',
    summary:
      'The signed-in person’s own web conversation (with one agent, or the team), oldest first: what they said and what was answered. A forgotten line is marked forgotten, without its words.',
    access: 'person',
    query: z.object({
      team: z.enum(['true', 'false']).optional().describe('true: the team conversation; else the one-agent conversation.'),
      limit: z.coerce.number().int().min(1).max(500).optional(),
    }),
    response: {
      status: 200,
      schema: chatHistorySchema,
    },
    async handle({ query, viewer }) {
      const externalId = `${query.team === 'true' ? 'team' : 'solo'}:${viewer.person.id}`;
      const transcript = await core.transcript({ channel: 'web', externalId, personId: viewer.person.id, limit: query.limit ?? 100 });
      return { conversationId: transcript?.conversationId ?? null, messages: (transcript?.lines ?? []).map((line) => ({ ...line, at: line.at.toISOString() })) };
    },
  });

  /** The channel id of a web conversation of this person; another's, or none, is not found. */
  async function conversationOf(conversationId: string, personId: string): Promise<string> {
    const externalId = await database.adminScope('web: find a person’s conversation', async (tx) => {
      const { rows } = await tx.query<{ external_id: string }>(`select external_id from conversations where id = $1 and channel = 'web' and person_id = $2`, [conversationId, personId]);
      return rows[0]?.external_id;
    });
    if (!isUuid(conversationId) || externalId === undefined) throw new ApiError(404, 'conversation_not_found', `You have no conversation ${conversationId}.`);
    return externalId;
  }
}
