import { randomUUID } from 'node:crypto';
import type { Person } from '@roster/core';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from './support/fake-openai.js';
import { startApiServer, type ApiServer, type Browser } from './support/api-server.js';

/** Chat over server-sent events, through the real server, core and memory; models are the offline engine or a local fake of the OpenAI API. */
let server: ApiServer;
let fake: Awaited<ReturnType<typeof startFakeOpenAi>>;
let ada: Person;
let owner: Browser;
let member: Browser;
/** Holds the fake model's answer to "wait for it" until the test opens it. */
let openGate: () => void = () => {};
const gate = new Promise<void>((resolve) => (openGate = resolve));

interface StreamEvent {
  event: string;
  data: any;
}

/** Parse a text/event-stream body into its events, in order. */
function events(response: LightMyRequestResponse): StreamEvent[] {
  expect(response.statusCode, response.body).toBe(200);
  expect(response.headers['content-type']).toMatch(/^text\/event-stream/);
  return response.body
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((line) => line.startsWith('event: '))?.slice('event: '.length) ?? 'message';
      const data = lines.filter((line) => line.startsWith('data: ')).map((line) => line.slice('data: '.length)).join('\n');
      return { event, data: JSON.parse(data) };
    });
}

const chat = (as: Browser, body: Record<string, unknown>) => server.request('POST', '/api/chat', { as, body });

beforeAll(async () => {
  // The fake model: asked to remember, it calls remember; then it answers with two pieces of text.
  fake = await startFakeOpenAi(async (request) => {
    const last = request.messages.at(-1);
    if (typeof last?.content === 'string' && last.content === 'wait for it') {
      await gate;
      return { text: 'Here I am.' };
    }
    if (request.toolResults.length === 0 && typeof last?.content === 'string' && last.content.startsWith('Note:')) {
      return { tool: 'remember', input: { content: last.content.slice('Note:'.length).trim() } };
    }
    return { text: 'Kept. I will remember it.' };
  });
  server = await startApiServer();
  const { directory } = server.runtime.core;
  ada = await directory.addPerson({ name: 'Ada', role: 'owner' });
  const bob = await directory.addPerson({ name: 'Bob', role: 'member' });
  await directory.addAgent({ name: 'Scout', job: 'finds things' });
  await directory.addAgent({ name: 'Coder', job: 'writes code' });
  await directory.addAgent({ name: 'Model', job: 'talks', engine: fake.engine });
  owner = await server.signIn(ada);
  member = await server.signIn(bob);
});

afterAll(async () => {
  openGate();
  await server?.close();
  await fake?.close();
});

describe('POST /api/chat', () => {
  it('streams the reply, then the turn’s tool calls and the memories it read, then done', async () => {
    const first = events(await chat(owner, { agent: 'Scout', message: 'remember that my sister is called Lia' }));
    expect(first.map((part) => part.event)).toEqual(['text-delta', 'turn-end', 'done']);
    expect(first[0]!.data).toEqual({ agent: 'Scout', delta: 'Noted: your sister is called Lia' });
    const remembered = first[1]!.data;
    expect(remembered).toMatchObject({ agent: 'Scout', text: 'Noted: your sister is called Lia', memories: [] });
    expect(remembered.toolCalls).toEqual([{ toolName: 'remember', input: { content: 'my sister is called Lia' }, output: expect.objectContaining({ factId: expect.any(String), created: true }) }]);
    const conversationId = first[2]!.data.conversationId;
    expect(conversationId).toMatch(/^[0-9a-f-]{36}$/);

    // The next turn's prompt carries the fact, and the turn says so, with why.
    const second = events(await chat(owner, { agent: 'Scout', message: 'what do you know about my sister?', conversation: conversationId }));
    expect(second.map((part) => part.event)).toEqual(['text-delta', 'turn-end', 'done']);
    const recalled = second[1]!.data;
    expect(recalled.text).toContain('your sister is called Lia');
    expect(recalled.toolCalls.map((call: { toolName: string }) => call.toolName)).toEqual(['recall']);
    expect(recalled.memories).toEqual([{ id: remembered.toolCalls[0].output.factId, content: 'my sister is called Lia', trust: 'active', why: expect.stringMatching(/words matched \(rank 1\)/) }]);
    expect(second[2]!.data).toEqual({ conversationId });

    // Another person's turn reads nothing of Ada's.
    const bobs = events(await chat(member, { agent: 'Scout', message: 'what do you know about my sister?' }));
    expect(bobs[1]!.data.memories).toEqual([]);
    expect(JSON.stringify(bobs)).not.toContain('Lia');
    expect(bobs.at(-1)!.data.conversationId).not.toBe(conversationId);
  });

  it('streams a model’s text as it comes, with the tools it called', async () => {
    const parts = events(await chat(owner, { agent: 'Model', message: 'Note: the meeting is on Friday' }));
    expect(parts.map((part) => part.event)).toEqual(['text-delta', 'turn-end', 'done']);
    expect(parts[0]!.data).toEqual({ agent: 'Model', delta: 'Kept. I will remember it.' });
    expect(parts[1]!.data.toolCalls).toEqual([{ toolName: 'remember', input: { content: 'the meeting is on Friday' }, output: expect.objectContaining({ factId: expect.any(String), created: true }) }]);
    const memory = (await server.request('GET', '/api/agents/Model/memory?person=Ada', { as: owner })).json() as { groups: Array<{ facts: Array<{ content: string; provenance: { channel: string } }> }> };
    expect(memory.groups[0]!.facts).toEqual([expect.objectContaining({ content: 'the meeting is on Friday', provenance: expect.objectContaining({ channel: 'web' }) })]);
  });

  it('gives each person their own history back, with forgotten lines marked and without their words', async () => {
    const history = async (as: Browser, query = '') => (await server.request('GET', `/api/chat/history${query}`, { as })).json() as { conversationId: string | null; messages: Array<{ role: string; agent: string | null; text: string; forgotten: boolean }> };
    events(await chat(member, { agent: 'Coder', message: 'remember that my bike stays at the north gate' }));
    events(await chat(member, { agent: 'Coder', message: 'remember that my bike is green' }));
    const before = await history(member);
    expect(before.conversationId).toMatch(/^[0-9a-f-]{36}$/);
    expect(before.messages.filter((line) => line.role === 'person').map((line) => line.text)).toEqual(
      expect.arrayContaining(['remember that my bike stays at the north gate', 'remember that my bike is green']),
    );
    expect(before.messages.find((line) => line.text === 'Noted: your bike is green')).toMatchObject({ role: 'agent', agent: 'Coder', forgotten: false });
    // Another person's history holds none of it (the owner's own conversation is the positive control of its own).
    events(await chat(owner, { agent: 'Scout', message: 'remember that my aunt lives in Porto' }));
    const adas = await history(owner);
    expect(adas.messages.some((line) => line.text === 'remember that my aunt lives in Porto')).toBe(true);
    expect(JSON.stringify(adas)).not.toContain('north gate');
    expect((await history(owner, '?team=true')).messages.some((line) => line.role === 'person')).toBe(false);

    // Forgotten: the lines stay in place, marked, with no words.
    events(await chat(member, { agent: 'Coder', message: 'forget where my bike stays' }));
    const after = await history(member);
    expect(JSON.stringify(after)).not.toContain('north gate');
    expect(after.messages.filter((line) => line.forgotten).length).toBeGreaterThan(0);
    expect(after.messages.every((line) => !line.forgotten || line.text === '')).toBe(true);
    expect(after.messages.some((line) => line.text === 'remember that my bike is green')).toBe(true);
    // Bad input changes nothing and says why.
    expect((await server.request('GET', '/api/chat/history?limit=0', { as: member })).statusCode).toBe(400);
  });

  it('answers with the whole team, one turn-end per agent', async () => {
    const parts = events(await chat(owner, { team: true, message: 'hello everyone' }));
    const ends = parts.filter((part) => part.event === 'turn-end').map((part) => part.data.agent).sort();
    expect(ends).toEqual(['Coder', 'Model', 'Scout']);
    expect(parts.at(-1)!.event).toBe('done');
  });

  it('refuses before streaming what cannot be said, and reports a failure inside the stream as an error event', async () => {
    const tooLong = await chat(owner, { agent: 'Scout', message: 'x'.repeat(4001) });
    expect(tooLong.statusCode).toBe(413);
    expect(tooLong.json()).toMatchObject({ error: { code: 'memory_input_invalid' } });
    const unknown = await chat(owner, { agent: 'Nobody', message: 'hi' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ error: { code: 'agent_not_found' } });
    const both = await chat(owner, { agent: 'Scout', team: true, message: 'hi' });
    expect(both.statusCode).toBe(400);
    const notYours = events(await chat(owner, { agent: 'Scout', message: 'hi' })).at(-1)!.data.conversationId;
    const stolen = await chat(member, { agent: 'Scout', message: 'hi', conversation: notYours });
    expect(stolen.statusCode).toBe(404);
    expect(stolen.json()).toMatchObject({ error: { code: 'conversation_not_found' } });
    expect((await server.request('POST', '/api/chat', { body: { agent: 'Scout', message: 'hi' } })).statusCode).toBe(401);

    // An archived agent is found, but cannot answer: the core refuses inside the turn.
    await server.request('POST', '/api/agents/Coder/archive', { as: owner });
    const refused = events(await chat(owner, { agent: 'Coder', message: 'hi' }));
    expect(refused.map((part) => part.event)).toEqual(['error']);
    expect(refused[0]!.data).toEqual({ code: 'agent_archived', message: expect.stringContaining('Coder is archived') });
    await server.request('POST', '/api/agents/Coder/restore', { as: owner });
    // Positive control: restored, it answers.
    expect(events(await chat(owner, { agent: 'Coder', message: 'hi' })).map((part) => part.event)).toEqual(['text-delta', 'turn-end', 'done']);
  });

  it('sends each part over HTTP as it comes: one agent’s reply while another is still thinking', async () => {
    const address = await server.app.listen({ host: '127.0.0.1', port: 0 });
    const response = await fetch(`${address}/api/chat`, {
      method: 'POST',
      headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrfToken, 'content-type': 'application/json' },
      body: JSON.stringify({ team: true, message: 'wait for it' }),
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let received = '';
    // Scout (offline) answers at once; the model waits at the gate, so the turn cannot have ended.
    while (!received.includes('"agent":"Scout"')) {
      const { value, done } = await reader.read();
      expect(done).toBe(false);
      received += decoder.decode(value, { stream: true });
    }
    expect(received).toMatch(/^event: text-delta\n/);
    expect(received).not.toContain('turn-end');
    openGate();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      received += decoder.decode(value, { stream: true });
    }
    expect(received).toContain('data: {"agent":"Model","delta":"Here I am."}');
    expect(received.match(/event: turn-end/g)?.length).toBe(3);
    expect(received.trimEnd().split('\n\n').at(-1)).toMatch(/^event: done\n/);
  });

  it('tells a notice apart from a reply', async () => {
    const parts = events(await chat(owner, { message: '/agent Scout' }));
    expect(parts.map((part) => part.event)).toEqual(['notice', 'done']);
    expect(parts[0]!.data).toEqual({ text: 'Now talking to Scout.' });
  });

  it('stores a message sent again with the same id once, and says so, while another id is a new message', async () => {
    const id = randomUUID();
    const history = async () => ((await server.request('GET', '/api/chat/history?team=false', { as: member })).json() as { messages: Array<{ role: string; text: string }> }).messages;
    const first = events(await chat(member, { agent: 'Scout', message: 'The ferry leaves at nine.', id }));
    expect(first.at(-1)).toMatchObject({ event: 'done', data: { conversationId: expect.any(String) } });
    expect(first.at(-1)!.data.duplicate).toBeUndefined();
    // The answer was lost on the way: the client sends the same message with the same id.
    const again = events(await chat(member, { agent: 'Scout', message: 'The ferry leaves at nine.', id }));
    expect(again.map((part) => part.event)).toEqual(['done']);
    expect(again[0]!.data).toEqual({ conversationId: first.at(-1)!.data.conversationId, duplicate: true });
    expect((await history()).filter((line) => line.text === 'The ferry leaves at nine.')).toHaveLength(1);
    // The control: the same words under another id are a message of their own, answered.
    const other = events(await chat(member, { agent: 'Scout', message: 'The ferry leaves at nine.', id: randomUUID() }));
    expect(other.map((part) => part.event)).toContain('turn-end');
    expect((await history()).filter((line) => line.text === 'The ferry leaves at nine.')).toHaveLength(2);
    // Not an id: refused before anything is stored.
    expect((await chat(member, { agent: 'Scout', message: 'Hello', id: 'not-a-uuid' })).statusCode).toBe(400);
  });
});
