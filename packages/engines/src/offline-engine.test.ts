import type { EnginePart, EngineRequest, EngineTool } from '@roster/contracts';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createOfflineEngine } from './offline-engine.js';

interface StoredFact {
  id: string;
  content: string;
  trust: string;
}

/**
 * Memory tools with the core's input and output shapes over a tiny map, for
 * reading the phrasings and the replies. Recall matches facts sharing a word
 * of three letters or more. Forget, correct and update are left to
 * tests/destructive-actions.test.ts, which runs them over the real memory:
 * which fact they may act on is decided by the real search, never a stand-in.
 */
function memoryTools(initial: readonly string[] = []) {
  const facts = new Map<string, StoredFact>();
  let next = 0;
  const add = (content: string): StoredFact => {
    next += 1;
    const fact = { id: `fact-${next}`, content, trust: 'stated' };
    facts.set(fact.id, fact);
    return fact;
  };
  for (const content of initial) add(content);
  const words = (text: string) => new Set(text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((word) => word.length >= 3));

  const remember: EngineTool<{ content: string; category?: string }> = {
    name: 'remember',
    description: 'Stores a fact about the person.',
    inputSchema: z.object({ content: z.string().min(1).max(120, 'a fact is at most 120 characters'), category: z.string().optional() }),
    execute: async ({ content }) => {
      if (/password/i.test(content)) return { error: 'that looks like a secret, and secrets are not stored' };
      const fact = add(content);
      return { factId: fact.id, content: fact.content, created: true };
    },
  };
  const recall: EngineTool<{ query: string; limit?: number }> = {
    name: 'recall',
    description: 'Finds facts about the person.',
    inputSchema: z.object({ query: z.string(), limit: z.number().optional() }),
    execute: async ({ query }) => {
      const wanted = words(query);
      const hits = [...facts.values()].filter((fact) => [...words(fact.content)].some((word) => wanted.has(word)));
      return { facts: hits.map((fact) => ({ ...fact })) };
    },
  };
  const rewrite = (name: 'correct' | 'update'): EngineTool<{ factId: string; content: string }> => ({
    name,
    description: `${name}s a fact.`,
    inputSchema: z.object({ factId: z.string(), content: z.string() }),
    execute: async ({ factId, content }) => {
      const fact = facts.get(factId);
      if (fact === undefined) return { error: `no fact ${factId}` };
      fact.content = content;
      return { factId, content };
    },
  });
  const forget: EngineTool<{ factId: string }> = {
    name: 'forget',
    description: 'Forgets a fact.',
    inputSchema: z.object({ factId: z.string() }),
    execute: async ({ factId }) => ({ forgotten: facts.delete(factId) }),
  };
  const tools = [remember, recall, rewrite('correct'), rewrite('update'), forget] as EngineTool[];
  return { tools, contents: () => [...facts.values()].map((fact) => fact.content) };
}

const engine = createOfflineEngine({ agentName: 'Tess' });

async function say(message: string, tools: readonly EngineTool[]) {
  const parts: EnginePart[] = [];
  const request: EngineRequest = { system: 'ignored', memory: 'ignored', history: [], message, tools, onPart: (part) => parts.push(part) };
  const result = await engine.run(request);
  return { ...result, parts };
}

const help =
  "I'm Tess. I run without a language model, so I can remember, recall, update, correct and forget facts, and answer " +
  'questions from them: try "remember that …", "what is my …?" or "what do you know about …".';

describe('offline engine', () => {
  it('is the local engine called offline', () => {
    expect(engine.id).toBe('offline');
    expect(engine.local).toBe(true);
  });

  it('remembers, replying and streaming the tool call, its result and the reply', async () => {
    const memory = memoryTools();

    const result = await say('Remember that Ada drinks green tea', memory.tools);

    const output = { factId: 'fact-1', content: 'Ada drinks green tea', created: true };
    expect(result.text).toBe('Noted: Ada drinks green tea');
    expect(result.toolCalls).toEqual([{ toolName: 'remember', input: { content: 'Ada drinks green tea' }, output }]);
    expect(result.parts).toEqual([
      { type: 'tool-call', toolName: 'remember', input: { content: 'Ada drinks green tea' } },
      { type: 'tool-result', toolName: 'remember', output },
      { type: 'text-delta', text: 'Noted: Ada drinks green tea' },
      { type: 'turn-end', text: 'Noted: Ada drinks green tea' },
    ]);
    expect(memory.contents()).toEqual(['Ada drinks green tea']);
  });

  it('remembers without "that", keeping the fact as written but for surrounding whitespace', async () => {
    const memory = memoryTools();

    const result = await say("  remember   Ada's birthday is 3 May.  ", memory.tools);

    expect(result.text).toBe("Noted: Ada's birthday is 3 May.");
    expect(memory.contents()).toEqual(["Ada's birthday is 3 May."]);
  });

  it('recalls, one line per fact', async () => {
    const memory = memoryTools(['Ada drinks green tea', 'Ada lives in Turin', 'Ada takes tea without sugar']);

    const result = await say('What do you know about tea?', memory.tools);

    expect(result.text).toBe('- Ada drinks green tea\n- Ada takes tea without sugar');
    expect(result.toolCalls).toEqual([
      {
        toolName: 'recall',
        input: { query: 'tea' },
        output: {
          facts: [
            { id: 'fact-1', content: 'Ada drinks green tea', trust: 'stated' },
            { id: 'fact-3', content: 'Ada takes tea without sugar', trust: 'stated' },
          ],
        },
      },
    ]);
  });

  it('says so when it recalls nothing', async () => {
    const memory = memoryTools(['Ada drinks green tea']);

    const result = await say('what do you remember about jazz', memory.tools);

    expect(result.text).toBe("I don't know anything about jazz yet.");
    expect(result.toolCalls).toEqual([{ toolName: 'recall', input: { query: 'jazz' }, output: { facts: [] } }]);
  });

  it('understands the Italian forms', async () => {
    const memory = memoryTools();

    expect((await say('Ricorda che il tè preferito è verde', memory.tools)).text).toBe('Noted: il tè preferito è verde');
    expect((await say('ricorda la casa è a Torino', memory.tools)).text).toBe('Noted: la casa è a Torino');
    expect((await say('Cosa sai di casa?', memory.tools)).text).toBe('- la casa è a Torino');
    expect((await say('cosa ricordi di giardino', memory.tools)).text).toBe("I don't know anything about giardino yet.");
    expect(memory.contents()).toEqual(['il tè preferito è verde', 'la casa è a Torino']);
  });

  it('says what it is and calls nothing when no rule matches', async () => {
    const memory = memoryTools(['Ada drinks green tea']);

    const result = await say('How are you today?', memory.tools);

    expect(result.text).toBe(help);
    expect(result.toolCalls).toEqual([]);
    expect(result.parts).toEqual([
      { type: 'text-delta', text: help },
      { type: 'turn-end', text: help },
    ]);
  });

  it('keeps no memories for a stranger, who is offered no tools', async () => {
    const result = await say('remember that my code is 1234', []);

    expect(result.text).toBe("I'm Tess. I can't keep memories in this conversation.");
    expect(result.toolCalls).toEqual([]);
    expect(result.parts.map((part) => part.type)).toEqual(['text-delta', 'turn-end']);
  });

  it('calls nothing when a tool the rule may need is missing', async () => {
    const memory = memoryTools(['Ada drinks green tea']);
    const withoutCorrect = memory.tools.filter((tool) => tool.name !== 'correct');

    const result = await say('Actually, Ada drinks black tea', withoutCorrect);

    expect(result.text).toBe("I'm Tess. I can't keep memories in this conversation.");
    expect(result.toolCalls).toEqual([]);
    expect(memory.contents()).toEqual(['Ada drinks green tea']);
  });

  it('passes on the error a tool answers', async () => {
    const memory = memoryTools();

    const result = await say('remember that my password is hunter2', memory.tools);

    expect(result.text).toBe("I couldn't do that: that looks like a secret, and secrets are not stored");
    expect(result.toolCalls).toEqual([
      {
        toolName: 'remember',
        input: { content: 'my password is hunter2' },
        output: { error: 'that looks like a secret, and secrets are not stored' },
      },
    ]);
    expect(memory.contents()).toEqual([]);
  });

  it('refuses input the tool schema rejects, without calling the tool', async () => {
    const memory = memoryTools();

    const result = await say(`remember that ${'a'.repeat(121)}`, memory.tools);

    expect(result.text).toBe("I couldn't do that: a fact is at most 120 characters");
    expect(result.toolCalls).toEqual([]);
    expect(memory.contents()).toEqual([]);
  });
});
