import { until, type FakePlatform } from '@roster/channels/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeDiscord } from '@roster/channel-discord/testing';
import { startFakeSlack } from '@roster/channel-slack/testing';
import { startFakeTelegram } from '@roster/channel-telegram/testing';
import { startChannelRoster } from './support/channel-roster.js';

/**
 * A long answer streams on Telegram, Slack and Discord: sent as it stands once it has
 * been written for a while, then edited as it grows, no more often than the
 * bound, and finally replaced by the whole reply. The model is a local fake
 * of the OpenAI API that writes its answer in pieces, with pauses.
 */
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const everyMs = 300;
const pieces = Array.from({ length: 10 }, (_, index) => `Part ${index + 1} of the plan is settled. `);
const whole = pieces.join('').trim();

/** Roster on this platform, the model writing `answer` in its pieces with pauses, replies streamed. */
async function setUp(platform: FakePlatform, answer: { text: string; pieces: string[] }) {
  const { user, served, cleanup } = await startChannelRoster(platform, { answer: { ...answer, pauseMs: 120 }, streaming: { afterMs: 200, everyMs } });
  cleanups.push(cleanup);
  return { user, served };
}

describe.each([
  ['telegram', () => startFakeTelegram()],
  ['slack', () => startFakeSlack()],
  ['discord', () => startFakeDiscord()],
] as const)('streaming a long answer on %s', (_name, start) => {
  it('sends the answer as it stands, edits it as it grows at a bounded rate, and ends with the whole reply', async () => {
    const platform = await start();
    cleanups.push(() => platform.close());
    const { user, served } = await setUp(platform, { text: whole, pieces });
    await platform.deliver({ chat: 'dm', from: user, text: 'what is the plan?' });
    await until(() => platform.sent().some((message) => message.text === whole), 'the whole reply', 20_000);
    await served.settled();

    const mine = platform.sent().filter((message) => message.chatId === platform.dmChatId(user));
    expect(mine.map((message) => message.text)).toEqual([whole]);
    const edits = platform.edits().filter((edit) => edit.id === mine[0]!.id);
    // It was shown before it was finished: the growing text, marked unfinished, then the whole.
    expect(edits.length).toBeGreaterThanOrEqual(2);
    expect(edits.slice(0, -1).filter((edit) => !(edit.text.endsWith(" …") && whole.startsWith(edit.text.slice(0, -2).trim())))).toEqual([]);
    expect(edits.at(-1)!.text).toBe(whole);
    // No faster than the bound between the streamed edits (the final one goes when the reply is done).
    const streamed = edits.slice(0, -1);
    for (let index = 1; index < streamed.length; index += 1) expect(streamed[index]!.at - streamed[index - 1]!.at).toBeGreaterThanOrEqual(everyMs - 50);
  });

  it('sends a quick answer once, whole, with no edit (the control)', async () => {
    const platform = await start();
    cleanups.push(() => platform.close());
    const { user, served } = await setUp(platform, { text: 'Done.', pieces: ['Done.'] });
    await platform.deliver({ chat: 'dm', from: user, text: 'quick one' });
    await until(() => platform.sent().some((message) => message.text === 'Done.'), 'the reply', 20_000);
    await served.settled();
    expect(platform.sent().filter((message) => message.chatId === platform.dmChatId(user)).map((message) => message.text)).toEqual(['Done.']);
    expect(platform.edits()).toEqual([]);
  });
});

describe('streaming past the platform limit', () => {
  it('keeps the beginning in the streamed message and sends the rest after it', async () => {
    const platform = await startFakeTelegram();
    cleanups.push(() => platform.close());
    const sentence = 'This sentence fills the long answer with words. ';
    const long = Array.from({ length: 8 }, () => sentence.repeat(15));
    const text = long.join('').trim();
    expect(text.length).toBeGreaterThan(4096);
    const { user, served } = await setUp(platform, { text, pieces: long });
    await platform.deliver({ chat: 'dm', from: user, text: 'tell me everything' });
    await until(() => platform.sent().filter((message) => message.chatId === platform.dmChatId(user)).length >= 2, 'the rest of the reply', 20_000);
    await served.settled();
    const mine = platform.sent().filter((message) => message.chatId === platform.dmChatId(user));
    expect(mine.every((message) => message.text.length <= 4096)).toBe(true);
    expect(mine.map((message) => message.text).join(' ').split(/\s+/)).toEqual(text.split(/\s+/));
    expect(platform.edits().some((edit) => edit.id === mine[0]!.id && edit.text.endsWith(' …'))).toBe(true);
  });
});
