/**
 * The engine conformance suite: what every model-backed engine must do,
 * whatever provider is behind it. Each provider supplies only a harness that
 * starts a fake of its far side and makes an engine against it. Test-only:
 * excluded from the build.
 */
import { randomBytes } from 'node:crypto';
import type { Engine, EnginePart, EngineRequest, EngineTool } from '@roster/contracts';
import { RosterError } from '@roster/errors';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fakeUsage, type FakeProvider } from './fake-providers.js';

interface ConformanceSubject {
  readonly fake: FakeProvider;
  /** The API key the engine sends; no error message may contain it. */
  readonly apiKey: string;
  createEngine(options?: { maxRetries?: number; timeoutMs?: number }): Engine;
}

export interface EngineConformanceHarness {
  /** Starts a fake of the provider's far side; the suite closes it after each test. */
  start(): Promise<ConformanceSubject>;
}

const system = 'You are Tess, the household agent.\nBe brief. Use recall before answering questions about the person.';

function turn(overrides: Partial<EngineRequest> = {}): EngineRequest & { parts: EnginePart[] } {
  const parts: EnginePart[] = [];
  return {
    system,
    memory: 'Facts about Ada:\n- Ada drinks green tea',
    history: [
      { role: 'user', content: 'Hi Tess' },
      { role: 'assistant', content: 'Hello Ada.' },
    ],
    message: 'What do I drink?',
    tools: [],
    onPart: (part) => parts.push(part),
    ...overrides,
    parts,
  };
}

async function failureOf(promise: Promise<unknown>): Promise<RosterError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!RosterError.isInstance(error)) throw new Error(`expected a RosterError, got ${String(error)}`);
  return error;
}

export function describeEngineConformance(name: string, harness: EngineConformanceHarness): void {
  describe(`engine conformance: ${name}`, () => {
    let subject: ConformanceSubject;

    beforeEach(async () => {
      subject = await harness.start();
    });

    afterEach(async () => {
      await subject.fake.close();
    });

    it('streams a plain reply as text-delta parts and ends the turn with the whole text', async () => {
      subject.fake.script({ type: 'text', chunks: ['You drink ', 'green tea', '.'] });
      const request = turn();

      const result = await subject.createEngine().run(request);

      expect(result.text).toBe('You drink green tea.');
      expect(result.toolCalls).toEqual([]);
      expect(result.usage).toEqual(fakeUsage);
      expect(request.parts).toEqual([
        { type: 'text-delta', text: 'You drink ' },
        { type: 'text-delta', text: 'green tea' },
        { type: 'text-delta', text: '.' },
        { type: 'turn-end', text: 'You drink green tea.' },
      ]);
      expect(subject.fake.requests).toHaveLength(1);
    });

    it('reads an image: it goes with the current message as a content part, beside its words, and nowhere else', async () => {
      const engine = subject.createEngine();
      expect(engine.accepts).toContain('image');
      subject.fake.script({ type: 'text', chunks: ['A label.'] }, { type: 'text', chunks: ['Tea.'] });
      const picture = randomBytes(600);
      const base64 = picture.toString('base64');

      const result = await engine.run(turn({ message: 'What does this say?', files: [{ kind: 'image', mediaType: 'image/png', data: picture }] }));

      expect(result.text).toBe('A label.');
      const messages = subject.fake.requests[0]!.body.messages as unknown[];
      expect(JSON.stringify(messages.at(-1))).toContain(base64);
      expect(JSON.stringify(messages.at(-1))).toContain('What does this say?');
      expect(JSON.stringify(messages.slice(0, -1))).not.toContain(base64);
      // The control: a turn without files carries no image.
      await engine.run(turn());
      expect(JSON.stringify(subject.fake.requests[1]!.body)).not.toContain(base64.slice(0, 40));
      expect(JSON.stringify(subject.fake.requests[1]!.body.messages)).not.toMatch(/image/);
    });

    it('runs a tool call, executes the tool with the model arguments and sends its result back', async () => {
      const seen: unknown[] = [];
      const recall: EngineTool<{ query: string }, { facts: Array<{ id: string; content: string; trust: string }> }> = {
        name: 'recall',
        description: 'Searches what you know about the person.',
        inputSchema: z.object({ query: z.string() }),
        execute: async (input) => {
          seen.push(input);
          return { facts: [{ id: 'fact-1', content: 'Ada drinks green tea', trust: 'stated' }] };
        },
      };
      subject.fake.script(
        { type: 'tool-call', toolName: 'recall', input: { query: 'tea' } },
        { type: 'text', chunks: ['Green tea.'] },
      );
      const request = turn({ tools: [recall as EngineTool] });

      const result = await subject.createEngine().run(request);

      expect(seen).toEqual([{ query: 'tea' }]);
      const output = { facts: [{ id: 'fact-1', content: 'Ada drinks green tea', trust: 'stated' }] };
      expect(result.toolCalls).toEqual([{ toolName: 'recall', input: { query: 'tea' }, output }]);
      expect(result.text).toBe('Green tea.');
      expect(request.parts).toEqual([
        { type: 'tool-call', toolName: 'recall', input: { query: 'tea' } },
        { type: 'tool-result', toolName: 'recall', output },
        { type: 'text-delta', text: 'Green tea.' },
        { type: 'turn-end', text: 'Green tea.' },
      ]);
      const [first, second] = subject.fake.requests;
      expect(first && subject.fake.toolResultsOf(first)).toEqual([]);
      const sentBack = second ? subject.fake.toolResultsOf(second) : [];
      expect(sentBack).toHaveLength(1);
      expect(JSON.parse(sentBack[0] ?? 'null')).toEqual(output);
    });

    it('does not obey a tool call with bad arguments: the tool does not run and the model is told why', async () => {
      let runs = 0;
      const recall: EngineTool = {
        name: 'recall',
        description: 'Searches what you know about the person.',
        inputSchema: z.object({ query: z.string() }),
        execute: async () => {
          runs += 1;
          return { facts: [] };
        },
      };
      subject.fake.script(
        { type: 'tool-call', toolName: 'recall', input: { query: 42 } },
        { type: 'text', chunks: ['Sorry.'] },
      );

      const result = await subject.createEngine().run(turn({ tools: [recall] }));

      expect(runs).toBe(0);
      expect(result.text).toBe('Sorry.');
      expect(result.toolCalls).toEqual([{ toolName: 'recall', input: { query: 42 }, output: { error: expect.any(String) } }]);
      const second = subject.fake.requests[1];
      const told = second ? subject.fake.toolResultsOf(second) : [];
      expect(told).toHaveLength(1);
      expect(told[0]).toMatch(/query/);
    });

    it('joins the text of two steps, so that the streamed text and the final text agree', async () => {
      subject.fake.script(
        { type: 'tool-call', toolName: 'recall', input: { query: 'tea' }, before: ['Let me ', 'check.'] },
        { type: 'text', chunks: ['Green tea.'] },
      );
      const recall: EngineTool = {
        name: 'recall',
        description: 'Searches what you know about the person.',
        inputSchema: z.object({ query: z.string() }),
        execute: async () => ({ facts: [] }),
      };
      const request = turn({ tools: [recall] });

      const result = await subject.createEngine().run(request);

      expect(result.text).toBe('Let me check.\n\nGreen tea.');
      const streamed = request.parts.flatMap((part) => (part.type === 'text-delta' ? [part.text] : []));
      expect(streamed.join('')).toBe(result.text);
      expect(request.parts.at(-1)).toEqual({ type: 'turn-end', text: result.text });
    });

    it('allows maxSteps tool rounds, then makes the model answer without tools', async () => {
      const recall: EngineTool = {
        name: 'recall',
        description: 'Searches what you know about the person.',
        inputSchema: z.object({ query: z.string() }),
        execute: async () => ({ facts: [] }),
      };
      subject.fake.script(
        { type: 'tool-call', toolName: 'recall', input: { query: 'tea' } },
        { type: 'tool-call', toolName: 'recall', input: { query: 'coffee' } },
        { type: 'text', chunks: ['I know nothing about your drinks.'] },
      );

      const result = await subject.createEngine().run(turn({ tools: [recall], maxSteps: 2 }));

      expect(result.toolCalls.map((call) => call.input)).toEqual([{ query: 'tea' }, { query: 'coffee' }]);
      expect(result.text).toBe('I know nothing about your drinks.');
      const choices = subject.fake.requests.map((request) => subject.fake.toolChoiceOf(request));
      expect(choices).toHaveLength(3);
      expect(choices.slice(0, 2)).not.toContain('none');
      expect(choices[2]).toBe('none');
    });

    it('retries a 429 and returns the answer that follows', async () => {
      subject.fake.script(
        { type: 'error', status: 429, message: 'Rate limit reached', headers: { 'retry-after-ms': '1' } },
        { type: 'text', chunks: ['Green tea.'] },
      );

      const result = await subject.createEngine().run(turn());

      expect(subject.fake.requests).toHaveLength(2);
      expect(result.text).toBe('Green tea.');
    });

    it('fails a 401 at once, as a non-retryable engine_failed whose message does not repeat the key', async () => {
      subject.fake.script({ type: 'error', status: 401, message: `Incorrect API key provided: ${subject.apiKey}.` });

      const error = await failureOf(subject.createEngine().run(turn()));

      expect(error.code).toBe('engine_failed');
      expect(error.retryable).toBe(false);
      expect(error.message).toContain('401');
      expect(error.message).not.toContain(subject.apiKey);
      expect(subject.fake.requests).toHaveLength(1);
    });

    it('gives up on a 5xx after its retries, as a retryable engine_failed', async () => {
      const overloaded = { type: 'error', status: 503, message: 'Overloaded', headers: { 'retry-after-ms': '1' } } as const;
      subject.fake.script(overloaded, overloaded);

      const error = await failureOf(subject.createEngine({ maxRetries: 1 }).run(turn()));

      expect(error.code).toBe('engine_failed');
      expect(error.retryable).toBe(true);
      expect(subject.fake.requests).toHaveLength(2);
    });

    it('sends the system prefix first and byte-identical from turn to turn, the memory block after it', async () => {
      subject.fake.script({ type: 'text', chunks: ['One.'] }, { type: 'text', chunks: ['Two.'] });
      const engine = subject.createEngine();

      await engine.run(turn({ memory: 'Facts about Ada:\n- Ada drinks green tea', message: 'First?' }));
      await engine.run(turn({ memory: 'Facts about Ada:\n- Ada lives in Turin', message: 'Second?' }));

      const [first, second] = subject.fake.requests;
      if (first === undefined || second === undefined) throw new Error('expected two requests');
      expect(subject.fake.systemOf(first)).toBe(system);
      expect(subject.fake.systemOf(second)).toBe(system);
      expect(subject.fake.systemsOf(first)).toEqual([system, 'Facts about Ada:\n- Ada drinks green tea']);
      expect(subject.fake.systemsOf(second)).toEqual([system, 'Facts about Ada:\n- Ada lives in Turin']);
    });

    it('fails with a retryable engine_timeout when the provider does not answer in time', async () => {
      subject.fake.script({ type: 'hang' });

      const error = await failureOf(subject.createEngine({ timeoutMs: 300 }).run(turn()));

      expect(error.code).toBe('engine_timeout');
      expect(error.retryable).toBe(true);
      expect(subject.fake.requests).toHaveLength(1);
    });

    it('stops when the caller aborts, without retrying', async () => {
      subject.fake.script({ type: 'hang' });
      const controller = new AbortController();
      void subject.fake.received(1).then(() => controller.abort());

      const error = await failureOf(subject.createEngine().run(turn({ signal: controller.signal })));

      expect(error.code).toBe('engine_aborted');
      expect(error.retryable).toBe(false);
      expect(subject.fake.requests).toHaveLength(1);
    });
  });
}
