import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLoopFixture, type LoopFixture } from './support/learning-loop.js';
import { scanRedis } from './support/scan.js';

/**
 * A failed job stays in Redis for a month, where a forget does not reach. A
 * model's error text can repeat the words it was sent; what the job keeps is
 * Roster's code and message, never that text, and no stack.
 */
let loop: LoopFixture;
let server: http.Server;
let extractRequests = 0;

beforeAll(async () => {
  // The far side: answers a turn like OpenAI's streaming API, and refuses extraction with an error that quotes its input.
  server = http.createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk) => (raw += chunk));
    request.on('end', () => {
      const body = JSON.parse(raw) as { messages: Array<{ role: string; content: unknown }> };
      const said = JSON.stringify(body.messages);
      if (said.includes('You extract facts')) {
        extractRequests += 1;
        response.writeHead(400, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: { message: `This request cannot be processed: ${said.slice(-200)}`, type: 'invalid_request_error' } }));
        return;
      }
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
        `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      response.end(chunk({ role: 'assistant', content: 'Noted.' }) + chunk({}, 'stop') + 'data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  loop = await startLoopFixture();
});

afterAll(async () => {
  await loop?.cleanup();
  await new Promise((resolve) => server.close(resolve));
});

describe('a job that fails at the far side', () => {
  it('keeps the code and Roster’s message in Redis, not the model’s text that repeats the words', async () => {
    const { port } = server.address() as AddressInfo;
    const writer = await loop.roster.core.directory.addAgent({ name: 'Writer', job: 'writes letters', engine: `openai-compatible:http://127.0.0.1:${port}/v1#m` });
    const turn = await loop.roster.core.handle(
      { channel: 'cli', conversation: { externalId: 'writer-ada', kind: 'dm' }, sender: { personId: loop.ids.ada }, text: 'my mailbox key hangs on the quokka hook' },
      { agent: 'Writer' },
    );
    expect(turn.replies[0]?.text).toBe('Noted.');

    const failure = await loop.run('extract', { agentId: writer.id, idleMinutes: 0 }).then(
      () => null,
      (error: Error) => error.message,
    );
    // Positive control: the far side did answer with the words, and the job did fail, saying why in Roster's words.
    expect(extractRequests).toBe(1);
    expect(failure).toMatch(/^engine_failed: openai-compatible:.* answered 400; check the engine reference and the request$/);
    expect(await scanRedis(loop.prefix, ['quokka', 'mailbox'])).toEqual([]);
  });
});
