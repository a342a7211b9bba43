import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from './support/fake-openai.js';
import { startLoopFixture, type LoopFixture } from './support/learning-loop.js';
import { scanDatabase, scanRedis } from './support/scan.js';

/**
 * A team conversation: every agent hears what a person says. Scout and Coder
 * run on the offline engine (they remember and forget); Echo is a language
 * model on the far side that repeats what it is sent, so its replies and the
 * prompts it receives hold the words. Asked of the team, a forget reaches
 * every agent that heard it.
 */
let loop: LoopFixture;
let echo: Awaited<ReturnType<typeof startFakeOpenAi>>;
const words = ['gooseberry', 'tamarind'];

beforeAll(async () => {
  echo = await startFakeOpenAi((request) => {
    const last = request.messages.filter((message) => message.role === 'user').at(-1);
    return { text: `You said: ${typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content)}` };
  });
  loop = await startLoopFixture();
  await loop.roster.core.directory.addAgent({ name: 'Echo', job: 'repeats what it hears', engine: echo.engine });
});

afterAll(async () => {
  await loop?.cleanup();
  await echo?.close();
});

const team = (text: string) =>
  loop.roster.core.handle({ channel: 'cli', conversation: { externalId: 'team-ada', kind: 'dm' }, sender: { personId: loop.ids.ada }, text }, { team: true });

describe('forget in a team conversation', () => {
  it('reaches every agent that heard it: their facts, their replies, the prompts they will see', async () => {
    await team('remember that my gooseberry jam is in the tamarind cupboard');
    await team('remember that my umbrella is yellow');
    const before = await scanDatabase(loop.test.database, words);
    // Positive control: both offline agents kept the fact, and Echo repeated the words in its reply.
    expect(before['facts.content']).toBe(2);
    expect(before['messages.content']).toBeGreaterThanOrEqual(3);

    const forget = await team('forget that my gooseberry jam is in the tamarind cupboard');
    expect(forget.replies.filter((reply) => reply.agent !== 'Echo').map((reply) => reply.text)).toEqual(['Forgotten.', 'Forgotten.']);
    await loop.run('embed');

    expect(await scanDatabase(loop.test.database, words)).toEqual({});
    expect(await scanRedis(loop.prefix, words)).toEqual([]);
    // Echo's next prompt carries the conversation's history without the words; the unrelated fact stays.
    echo.requests.length = 0;
    const next = await team('what do you know about umbrella');
    expect(JSON.stringify(echo.requests)).not.toMatch(/gooseberry|tamarind/);
    expect(JSON.stringify(echo.requests)).toMatch(/umbrella/);
    expect(next.replies.filter((reply) => reply.agent !== 'Echo').map((reply) => reply.text)).toEqual(['- your umbrella is yellow', '- your umbrella is yellow']);
  });
});
