import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rosterFixture, type RosterFixture } from './support/roster-runtime.js';

/**
 * The offline engine answers a question from what clears the relevance floor,
 * through the core's public handle with the real engine, memory and an
 * embedded database. Each row is one person's own memory: an unrelated fact
 * is remembered first, and the question must not be answered from it (the
 * negative control); then the fact that answers it, and the answer must be
 * that fact, said back to the person (the positive control).
 */
const questions: ReadonlyArray<{ fact: string; question: string; answer: string; unrelated: string }> = [
  { fact: 'my locker number is 4417', question: 'what is my locker number?', answer: 'Your locker number is 4417.', unrelated: 'my favourite colour is teal' },
  { fact: 'I live in Lisbon', question: 'where do I live?', answer: 'You live in Lisbon.', unrelated: 'my locker number is 4418' },
  { fact: "my sister's birthday is on 3 May", question: "when is my sister's birthday?", answer: "Your sister's birthday is on 3 May.", unrelated: 'I drive a blue Fiat' },
  { fact: 'my favourite colour is teal', question: 'what is my favourite colour?', answer: 'Your favourite colour is teal.', unrelated: 'my locker number is 4418' },
  { fact: 'my dog is called Biscuit', question: 'what is my dog called?', answer: 'Your dog is called Biscuit.', unrelated: 'I work at the city hospital' },
  { fact: 'I work at the city hospital', question: 'where do I work?', answer: 'You work at the city hospital.', unrelated: 'my dog is called Biscuit' },
  { fact: 'my dentist is Dr Okafor', question: 'who is my dentist?', answer: 'Your dentist is Dr Okafor.', unrelated: 'I live in Lisbon' },
  { fact: 'my blood type is A positive', question: 'what is my blood type?', answer: 'Your blood type is A positive.', unrelated: 'my shoe size is 38' },
  { fact: 'my shoe size is 38', question: 'what is my shoe size?', answer: 'Your shoe size is 38.', unrelated: 'my blood type is A positive' },
  { fact: 'I was born in Porto', question: 'where was I born?', answer: 'You were born in Porto.', unrelated: 'my bank is Caixa Geral' },
  { fact: 'my bank is Caixa Geral', question: 'what is my bank?', answer: 'Your bank is Caixa Geral.', unrelated: 'I was born in Porto' },
  { fact: "I'm allergic to peanuts", question: 'what am I allergic to?', answer: "You're allergic to peanuts.", unrelated: 'my flat is on the fourth floor' },
  { fact: 'my flat is on the fourth floor', question: 'which floor is my flat on?', answer: 'Your flat is on the fourth floor.', unrelated: "I'm allergic to peanuts" },
  { fact: 'my passport expires in 2029', question: 'when does my passport expire?', answer: 'Your passport expires in 2029.', unrelated: "my cat's name is Pimenta" },
  { fact: "my cat's name is Pimenta", question: "what is my cat's name?", answer: "Your cat's name is Pimenta.", unrelated: 'my passport expires in 2029' },
  { fact: 'my husband is called Tomás', question: 'who is my husband?', answer: 'Your husband is called Tomás.', unrelated: 'my parking space is number 12' },
  { fact: 'my parking space is number 12', question: 'what is my parking space?', answer: 'Your parking space is number 12.', unrelated: 'my husband is called Tomás' },
  { fact: 'my wifi network is called casa-ana', question: 'what is my wifi network called?', answer: 'Your wifi network is called casa-ana.', unrelated: 'I prefer tea to coffee' },
  { fact: 'I prefer tea to coffee', question: 'do I prefer tea or coffee?', answer: 'You prefer tea to coffee.', unrelated: 'my wifi network is called casa-ana' },
  { fact: 'my manager is called Rui', question: 'who is my manager?', answer: 'Your manager is called Rui.', unrelated: 'my gym membership renews in March' },
  { fact: 'my gym membership renews in March', question: 'when does my gym membership renew?', answer: 'Your gym membership renews in March.', unrelated: 'my manager is called Rui' },
  { fact: 'my daughter plays the violin', question: 'what does my daughter play?', answer: 'Your daughter plays the violin.', unrelated: 'my mother lives in Coimbra' },
  { fact: 'my mother lives in Coimbra', question: 'where does my mother live?', answer: 'Your mother lives in Coimbra.', unrelated: 'my daughter plays the violin' },
  { fact: 'my anniversary is on 14 June', question: 'when is my anniversary?', answer: 'Your anniversary is on 14 June.', unrelated: 'my best friend is Marta' },
  { fact: 'my best friend is Marta', question: 'who is my best friend?', answer: 'Your best friend is Marta.', unrelated: 'my anniversary is on 14 June' },
  { fact: 'my phone is a Pixel 7', question: 'what phone do I have?', answer: 'Your phone is a Pixel 7.', unrelated: 'my favourite film is Amélie' },
  { fact: 'my favourite film is Amélie', question: 'tell me my favourite film', answer: 'Your favourite film is Amélie.', unrelated: 'my phone is a Pixel 7' },
  { fact: 'my spare key is under the blue pot', question: 'where is my spare key?', answer: 'Your spare key is under the blue pot.', unrelated: "my son's school is Escola Verde" },
  { fact: "my son's school is Escola Verde", question: "what is my son's school?", answer: "Your son's school is Escola Verde.", unrelated: 'my spare key is under the blue pot' },
  { fact: 'I play chess on Thursdays', question: 'when do I play chess?', answer: 'You play chess on Thursdays.', unrelated: 'my car insurance is with Fidelidade' },
  { fact: 'my car insurance is with Fidelidade', question: 'who is my car insurance with?', answer: 'Your car insurance is with Fidelidade.', unrelated: 'I play chess on Thursdays' },
  { fact: 'I take the 7:40 train', question: 'which train do I take?', answer: 'You take the 7:40 train.', unrelated: 'I hate loud restaurants' },
  { fact: 'I hate loud restaurants', question: 'what do I hate?', answer: 'You hate loud restaurants.', unrelated: 'I take the 7:40 train' },
  { fact: 'my locker number is 4417', question: 'do you remember my locker number?', answer: 'Your locker number is 4417.', unrelated: 'my pin reminder is a song' },
  { fact: 'my blood type is 0 negative', question: 'remind me of my blood type', answer: 'Your blood type is 0 negative.', unrelated: 'I live in Lisbon' },
  { fact: 'my gym locker is number 31', question: "what's my gym locker?", answer: 'Your gym locker is number 31.', unrelated: 'I live in Lisbon' },
];

/** Corrections in the common phrasings; each corrects the fact it names and leaves the unrelated one alone. */
const corrections: ReadonlyArray<{ phrasing: (value: string) => string; viaAnswer?: boolean }> = [
  { phrasing: (value) => `actually, my pet name is ${value}` },
  { phrasing: (value) => `actually my pet name is ${value}` },
  { phrasing: (value) => `Actually: my pet name is ${value}` },
  { phrasing: (value) => `that's wrong, my pet name is ${value}` },
  { phrasing: (value) => `that is wrong: my pet name is ${value}` },
  { phrasing: (value) => `that's not right, my pet name is ${value}` },
  { phrasing: (value) => `correction: my pet name is ${value}` },
  { phrasing: (value) => `no, my pet name is ${value}` },
  { phrasing: (value) => `nope, my pet name is ${value}` },
  { phrasing: (value) => `you're wrong, my pet name is ${value}` },
  { phrasing: (value) => `no, it's ${value}`, viaAnswer: true },
  { phrasing: (value) => `no, it is ${value}`, viaAnswer: true },
  { phrasing: (value) => `actually, it's ${value}`, viaAnswer: true },
  { phrasing: (value) => `that's wrong, it's ${value}`, viaAnswer: true },
];

let f: RosterFixture;
const people = [...questions.map((_, index) => `Q${index}`), ...corrections.map((_, index) => `C${index}`), 'Forgetful'];

beforeAll(async () => {
  f = await rosterFixture({ agents: [{ name: 'Scout' }], people });
}, 120_000);
afterAll(async () => {
  await f?.cleanup();
});

function sayAs(name: string) {
  const personId = f.people[name]!.id;
  return async (text: string): Promise<string> => {
    const result = await f.roster.core.handle({ channel: 'cli', conversation: { externalId: `recall-${name}`, kind: 'dm' }, sender: { personId }, text }, { agent: 'Scout' });
    return result.replies.map((reply) => reply.text).join('\n');
  };
}

describe('the offline engine answers from what clears the relevance floor', () => {
  it(`answers ${questions.length} questions with their fact, never with an unrelated one, and says "I don't know that" before the fact is said`, async () => {
    const wrong: string[] = [];
    for (const [index, row] of questions.entries()) {
      const say = sayAs(`Q${index}`);
      expect(await say(`remember that ${row.unrelated}`)).toMatch(/^Noted: /);
      const before = await say(row.question);
      if (before !== "I don't know that.") wrong.push(`before "${row.fact}": "${row.question}" → "${before}"`);
      expect(await say(`remember that ${row.fact}`)).toMatch(/^Noted: /);
      const after = await say(row.question);
      if (after !== row.answer) wrong.push(`"${row.question}" → "${after}", expected "${row.answer}"`);
    }
    expect(wrong).toEqual([]);
  }, 300_000);

  it('says "your" for "my" when it notes a fact', async () => {
    const say = sayAs('Q0');
    expect(await say('remember that my locker number is 4417')).toBe('Noted: your locker number is 4417');
  });

  it(`corrects the fact a correction names in ${corrections.length} phrasings, leaving an unrelated fact as it was`, async () => {
    const wrong: string[] = [];
    for (const [index, row] of corrections.entries()) {
      const say = sayAs(`C${index}`);
      const [old, value] = [`Rex${index}`, `Fido${index}`];
      await say(`remember that my pet name is ${old}`);
      await say('remember that my locker number is 4418');
      if (row.viaAnswer === true) {
        const answered = await say('what is my pet name?');
        if (answered !== `Your pet name is ${old}.`) wrong.push(`before "${row.phrasing(value)}": "${answered}"`);
      }
      const corrected = await say(row.phrasing(value));
      if (corrected !== `Corrected: your pet name is ${value}`) wrong.push(`"${row.phrasing(value)}" → "${corrected}"`);
      const pet = await say('what is my pet name?');
      if (pet !== `Your pet name is ${value}.`) wrong.push(`after "${row.phrasing(value)}": pet name → "${pet}"`);
      const locker = await say('what is my locker number?');
      if (locker !== 'Your locker number is 4418.') wrong.push(`after "${row.phrasing(value)}": locker → "${locker}"`);
    }
    expect(wrong).toEqual([]);
    // Each correction is a learning event for the agent and that person, as the learning loop expects.
    const events = await f.learningEvents();
    for (const [index] of corrections.entries()) expect(events).toContain(`Scout/C${index}/correction`);
  }, 300_000);

  it('in team mode, an agent with nothing relevant says so in a few words, and memory used lists only what clears the floor', async () => {
    const team = await rosterFixture({ agents: [{ name: 'Scout' }, { name: 'Coder' }], people: ['Ada'] });
    try {
      const ada = team.people.Ada!.id;
      const scope = (agent: string) => ({ agentId: team.agents[agent]!.id, personId: ada, audience: 'private' as const });
      const provenance = { actor: { kind: 'person' as const, id: ada } };
      // Coder holds long notes on other things; Scout holds the locker number.
      for (const topic of ['garden', 'holiday', 'recipes', 'reading', 'music']) {
        await team.roster.memory.remember(scope('Coder'), { content: `my ${topic} notes: ${`${topic} plans and lists, `.repeat(40)}`, provenance });
      }
      await team.roster.memory.remember(scope('Scout'), { content: 'my locker number is 4418', provenance });
      await team.roster.memory.remember(scope('Scout'), { content: 'my favourite colour is teal', provenance });
      const result = await team.roster.core.handle(
        { channel: 'cli', conversation: { externalId: 'team-locker', kind: 'dm' }, sender: { personId: ada }, text: 'what is my locker number?' },
        { team: true },
      );
      const replies = Object.fromEntries(result.replies.map((reply) => [reply.agent, reply]));
      // Positive control: the agent that was told answers with the fact, having used only it.
      expect(replies.Scout?.text).toBe('Your locker number is 4418.');
      expect(replies.Scout?.memories.map((memory) => memory.fact.content)).toEqual(['my locker number is 4418']);
      // The other answers in a few words, with none of its long notes.
      expect(replies.Coder?.text).toBe("I don't know that.");
      expect(replies.Coder?.memories).toEqual([]);
    } finally {
      await team.cleanup();
    }
  }, 120_000);

  it('after a forget, a question about the forgotten fact gets "I don\'t know" and leaks nothing', async () => {
    const say = sayAs('Forgetful');
    await say('remember that my favourite colour is teal');
    await say('remember that my locker number is 4418');
    // Positive control: before the forget, the fact is answered.
    expect(await say('what is my favourite colour?')).toBe('Your favourite colour is teal.');
    expect(await say('what do you know about my favourite colour?')).toBe('- your favourite colour is teal');

    expect(await say('forget that my favourite colour is teal')).toBe('Forgotten.');

    const asked = await say('what is my favourite colour?');
    const about = await say('what do you know about my favourite colour?');
    expect(asked).toBe("I don't know that.");
    expect(about).toBe("I don't know anything about your favourite colour yet.");
    for (const reply of [asked, about]) expect(reply).not.toMatch(/teal|4418|locker/);
    // The other fact is still answered.
    expect(await say('what is my locker number?')).toBe('Your locker number is 4418.');
  }, 120_000);
});
