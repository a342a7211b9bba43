/**
 * Fakes of the far side of the network for the engine tests: real HTTP
 * servers on 127.0.0.1 that answer like the OpenAI Chat Completions API and
 * the Anthropic Messages API, streaming, from a script. Test-only: excluded
 * from the build.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One answer to one model call, in provider-neutral terms; each wire renders it its own way. */
type ScriptedAnswer =
  | { type: 'text'; chunks: readonly string[] }
  /** A tool call, after the text chunks of `before` when given. */
  | { type: 'tool-call'; toolName: string; input: unknown; before?: readonly string[] }
  | { type: 'error'; status: number; message: string; headers?: Record<string, string> }
  /** Accepts the request and never answers. */
  | { type: 'hang' };

interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/**
 * Every fake reports the same usage, each in its own wire format: 12 input
 * tokens, 8 of them read from the prompt cache, and 5 output tokens.
 */
export const fakeUsage = { inputTokens: 12, outputTokens: 5, cachedInputTokens: 8 } as const;

export interface FakeProvider {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly requests: readonly RecordedRequest[];
  /** Queues answers, one per request, in order. A request with none left gets a 400 that names the fake. */
  script(...answers: ScriptedAnswer[]): void;
  /** Resolves when `count` requests have arrived. */
  received(count: number): Promise<void>;
  /** The first system text of a request, as the provider received it. */
  systemOf(request: RecordedRequest): string | undefined;
  /** Every system text of a request, in order. */
  systemsOf(request: RecordedRequest): string[];
  /** The tool results a request carries back to the model, as the text the model reads. */
  toolResultsOf(request: RecordedRequest): string[];
  /** The request's tool choice (`auto`, `none`, …), when it states one. */
  toolChoiceOf(request: RecordedRequest): string | undefined;
  close(): Promise<void>;
}

interface Wire {
  path: string;
  /** Renders a text or tool-call answer as the provider's SSE events. */
  stream(answer: Extract<ScriptedAnswer, { type: 'text' | 'tool-call' }>, body: Record<string, unknown>): string[];
  /** The provider's JSON error body. */
  error(status: number, message: string): unknown;
  systemsOf(body: Record<string, unknown>): string[];
  toolResultsOf(body: Record<string, unknown>): string[];
  toolChoiceOf(body: Record<string, unknown>): string | undefined;
}

async function startFake(wire: Wire): Promise<FakeProvider> {
  const requests: RecordedRequest[] = [];
  const answers: ScriptedAnswer[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];

  const server = createServer((incoming, response) => {
    const pieces: Buffer[] = [];
    incoming.on('data', (piece: Buffer) => pieces.push(piece));
    incoming.on('end', () => {
      const raw = Buffer.concat(pieces).toString('utf8');
      const body = raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>);
      requests.push({ method: incoming.method ?? '', path: incoming.url ?? '', headers: incoming.headers, body });
      for (const waiter of waiters.filter((entry) => requests.length >= entry.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
      answer(response, incoming.url ?? '', body);
    });
  });

  function answer(response: ServerResponse, path: string, body: Record<string, unknown>): void {
    if (path !== wire.path) return json(response, 404, wire.error(404, `the fake serves ${wire.path} only, not ${path}`));
    if (body.stream !== true) return json(response, 400, wire.error(400, 'the fake answers streaming requests only'));
    const next = answers.shift();
    if (next === undefined) return json(response, 400, wire.error(400, 'the fake has no answer scripted for this request'));
    if (next.type === 'hang') return;
    if (next.type === 'error') return json(response, next.status, wire.error(next.status, next.message), next.headers);
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const event of wire.stream(next, body)) response.write(event);
    response.end();
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    script: (...more) => void answers.push(...more),
    received: (count) =>
      requests.length >= count ? Promise.resolve() : new Promise((resolve) => waiters.push({ count, resolve })),
    systemOf: (request) => wire.systemsOf(request.body)[0],
    systemsOf: (request) => wire.systemsOf(request.body),
    toolResultsOf: (request) => wire.toolResultsOf(request.body),
    toolChoiceOf: (request) => wire.toolChoiceOf(request.body),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

function json(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}

function sse(data: unknown, event?: string): string {
  return `${event === undefined ? '' : `event: ${event}\n`}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
}

/** Splits a string in two, so that arguments arrive in more than one delta, as they do. */
function halves(text: string): string[] {
  const middle = Math.ceil(text.length / 2);
  return [text.slice(0, middle), text.slice(middle)];
}

function asRecords(value: unknown): Array<Record<string, unknown>> {
  return Array.isArray(value) ? value.filter((item): item is Record<string, unknown> => typeof item === 'object' && item !== null) : [];
}

/** Text of an OpenAI or Anthropic content field: a string, or an array of text parts. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  return asRecords(content)
    .map((part) => (typeof part.text === 'string' ? part.text : ''))
    .join('');
}

/** The OpenAI Chat Completions API (and the OpenAI-compatible servers that copy it). */
export function startFakeOpenAi(): Promise<FakeProvider> {
  let calls = 0;
  return startFake({
    path: '/v1/chat/completions',
    stream(answer, body) {
      calls += 1;
      const base = { id: `chatcmpl-${calls}`, object: 'chat.completion.chunk', created: 1_700_000_000, model: String(body.model) };
      const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
        sse({ ...base, choices: [{ index: 0, delta, finish_reason: finishReason }] });
      const events: string[] = [chunk({ role: 'assistant', content: '' })];
      if (answer.type === 'text') {
        for (const text of answer.chunks) events.push(chunk({ content: text }));
        events.push(chunk({}, 'stop'));
      } else {
        for (const text of answer.before ?? []) events.push(chunk({ content: text }));
        const [first = '', second = ''] = halves(JSON.stringify(answer.input));
        events.push(
          chunk({ tool_calls: [{ index: 0, id: `call_${calls}`, type: 'function', function: { name: answer.toolName, arguments: first } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: second } }] }),
          chunk({}, 'tool_calls'),
        );
      }
      const options = body.stream_options as { include_usage?: boolean } | undefined;
      if (options?.include_usage === true) {
        events.push(
          sse({
            ...base,
            choices: [],
            usage: {
              prompt_tokens: fakeUsage.inputTokens,
              completion_tokens: fakeUsage.outputTokens,
              total_tokens: fakeUsage.inputTokens + fakeUsage.outputTokens,
              prompt_tokens_details: { cached_tokens: fakeUsage.cachedInputTokens },
            },
          }),
        );
      }
      events.push(sse('[DONE]'));
      return events;
    },
    error: (status, message) => ({
      error: { message, type: status === 429 ? 'rate_limit_exceeded' : 'invalid_request_error', param: null, code: null },
    }),
    systemsOf: (body) =>
      asRecords(body.messages)
        .filter((message) => message.role === 'system' || message.role === 'developer')
        .map((message) => contentText(message.content)),
    toolResultsOf: (body) =>
      asRecords(body.messages)
        .filter((message) => message.role === 'tool')
        .map((message) => contentText(message.content)),
    toolChoiceOf: (body) => (typeof body.tool_choice === 'string' ? body.tool_choice : undefined),
  });
}

/** The Anthropic Messages API. */
export function startFakeAnthropic(): Promise<FakeProvider> {
  let calls = 0;
  return startFake({
    path: '/v1/messages',
    stream(answer, body) {
      calls += 1;
      const events = [
        sse(
          {
            type: 'message_start',
            message: {
              id: `msg_${calls}`,
              type: 'message',
              role: 'assistant',
              model: String(body.model),
              content: [],
              stop_reason: null,
              stop_sequence: null,
              usage: {
                input_tokens: fakeUsage.inputTokens - fakeUsage.cachedInputTokens,
                cache_read_input_tokens: fakeUsage.cachedInputTokens,
                cache_creation_input_tokens: 0,
                output_tokens: 1,
              },
            },
          },
          'message_start',
        ),
      ];
      let stopReason: string;
      let lastIndex = 0;
      if (answer.type === 'text') {
        events.push(sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start'));
        for (const text of answer.chunks) {
          events.push(sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }, 'content_block_delta'));
        }
        stopReason = 'end_turn';
      } else {
        let index = 0;
        if (answer.before !== undefined) {
          events.push(sse({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } }, 'content_block_start'));
          for (const text of answer.before) {
            events.push(sse({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } }, 'content_block_delta'));
          }
          events.push(sse({ type: 'content_block_stop', index }, 'content_block_stop'));
          index += 1;
        }
        events.push(
          sse(
            { type: 'content_block_start', index, content_block: { type: 'tool_use', id: `toolu_${calls}`, name: answer.toolName, input: {} } },
            'content_block_start',
          ),
        );
        for (const partial of halves(JSON.stringify(answer.input))) {
          events.push(
            sse({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: partial } }, 'content_block_delta'),
          );
        }
        lastIndex = index;
        stopReason = 'tool_use';
      }
      events.push(
        sse({ type: 'content_block_stop', index: lastIndex }, 'content_block_stop'),
        sse(
          { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: fakeUsage.outputTokens } },
          'message_delta',
        ),
        sse({ type: 'message_stop' }, 'message_stop'),
      );
      return events;
    },
    error: (status, message) => ({
      type: 'error',
      error: {
        type: status === 401 ? 'authentication_error' : status === 429 ? 'rate_limit_error' : status >= 500 ? 'api_error' : 'invalid_request_error',
        message,
      },
    }),
    systemsOf: (body) => (typeof body.system === 'string' ? [body.system] : asRecords(body.system).map((block) => contentText([block]))),
    toolResultsOf: (body) =>
      asRecords(body.messages)
        .flatMap((message) => asRecords(message.content))
        .filter((block) => block.type === 'tool_result')
        .map((block) => contentText(block.content)),
    toolChoiceOf: (body) => {
      const choice = body.tool_choice as { type?: unknown } | undefined;
      return typeof choice?.type === 'string' ? choice.type : undefined;
    },
  });
}
