import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One answer of the fake model: text (streamed in `pieces` with `pauseMs` between them, when given), or a call of one tool. */
export type FakeAnswer = { text: string; pieces?: string[]; pauseMs?: number } | { tool: string; input: unknown };

export interface FakeRequest {
  /** The system texts, first one first. */
  system: string[];
  /** Every message as the provider received it. */
  messages: Array<{ role: string; content: unknown; tool_calls?: unknown }>;
  /**
   * The content parts of the last user message, raw as they arrived (`text`,
   * `image_url` with its data URL, `input_audio`, `file`); a plain-text
   * message is one `text` part.
   */
  parts: Array<{ type: string; [key: string]: unknown }>;
  /** Tool results sent back to the model in this request. */
  toolResults: string[];
  tools: string[];
  receivedAt: number;
}

/**
 * A local server that answers like the OpenAI Chat Completions API
 * (streaming), deciding each answer from the request with `decide`, which may
 * wait first: the far side of the network, under the test's control.
 */
export async function startFakeOpenAi(decide: (request: FakeRequest) => Promise<FakeAnswer> | FakeAnswer) {
  const requests: FakeRequest[] = [];
  let calls = 0;
  const server = http.createServer((incoming, response) => {
    // The model list, as OpenAI answers it: what a check of the engine asks before any chat.
    if (incoming.method === 'GET' && incoming.url?.endsWith('/models') === true) {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ object: 'list', data: [{ id: 'fake-model', object: 'model', created: 1_700_000_000, owned_by: 'fake' }] }));
      return;
    }
    if (incoming.method !== 'POST') {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: `No route ${incoming.method} ${incoming.url}`, type: 'invalid_request_error' } }));
      return;
    }
    let raw = '';
    incoming.on('data', (chunk) => (raw += chunk));
    incoming.on('end', async () => {
      const body = JSON.parse(raw) as { model: string; messages: FakeRequest['messages']; tools?: Array<{ function: { name: string } }> };
      const text = (content: unknown) =>
        typeof content === 'string' ? content : Array.isArray(content) ? content.map((part: { text?: string }) => part.text ?? '').join('') : '';
      const lastUser = body.messages.filter((m) => m.role === 'user').at(-1);
      const parts = lastUser === undefined ? [] : typeof lastUser.content === 'string' ? [{ type: 'text', text: lastUser.content }] : (lastUser.content as FakeRequest['parts']);
      const request: FakeRequest = {
        parts,
        system: body.messages.filter((m) => m.role === 'system').map((m) => text(m.content)),
        messages: body.messages,
        toolResults: body.messages.filter((m) => m.role === 'tool').map((m) => text(m.content)),
        tools: (body.tools ?? []).map((tool) => tool.function.name),
        receivedAt: Date.now(),
      };
      requests.push(request);
      const answer = await decide(request);
      calls += 1;
      const base = { id: `chatcmpl-${calls}`, object: 'chat.completion.chunk', created: 1_700_000_000, model: body.model };
      const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
        `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(chunk({ role: 'assistant', content: '' }));
      if ('text' in answer) {
        if (answer.pieces === undefined) response.write(chunk({ content: answer.text }));
        for (const [index, piece] of (answer.pieces ?? []).entries()) {
          if (index > 0) await new Promise((resolve) => setTimeout(resolve, answer.pauseMs ?? 0));
          response.write(chunk({ content: piece }));
        }
        response.write(chunk({}, 'stop'));
      } else {
        response.write(chunk({ tool_calls: [{ index: 0, id: `call_${calls}`, type: 'function', function: { name: answer.tool, arguments: JSON.stringify(answer.input) } }] }));
        response.write(chunk({}, 'tool_calls'));
      }
      response.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    /** An engine reference for an agent on this fake. */
    engine: `openai-compatible:http://127.0.0.1:${port}/v1#fake-model`,
    requests,
    // Requests still waiting on an answer are cut, as a provider that went away cuts them.
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The agent a request is for, read from the system prefix ("You are NAME, …"). */
export function agentOf(request: FakeRequest): string {
  return /^You are ([A-Za-z0-9_-]+),/.exec(request.system[0] ?? '')?.[1] ?? 'unknown';
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
