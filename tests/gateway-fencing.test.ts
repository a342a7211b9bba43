import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { until } from '@roster/channels/testing';
import { startFakeTelegram } from '@roster/channel-telegram/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from './support/fake-openai.js';
import { freePort, runRoster, startRoster, tempDataDir, type RunningRoster } from './support/roster-process.js';

/**
 * The fencing token on what a gateway stores. A gateway paused (SIGSTOP) in
 * the middle of a turn, past its lease, while another takes the bot account
 * over: when it goes on (SIGCONT), the model's answer it was waiting for
 * arrives, and it neither stores that reply nor sends it. The gateway that
 * took over answers from then on.
 */

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

describe('a gateway that lost its lease while paused', () => {
  it('stores nothing and sends nothing for that account once it goes on; the one that took over answers', { timeout: 300_000 }, async () => {
    const dir = tempDataDir();
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
    const fake = await startFakeTelegram();
    cleanups.push(() => fake.close());
    // The model: the first "slow" question waits until the test lets it answer; everything else is answered at once.
    let letAnswer: () => void = () => undefined;
    const answered = new Promise<void>((resolve) => (letAnswer = resolve));
    let slow = 0;
    const model = await startFakeOpenAi(async (request) => {
      const said = request.parts.map((part) => String(part.text ?? '')).join(' ');
      if (said.includes('slow question') && (slow += 1) === 1) {
        await answered;
        return { text: 'late answer from the paused gateway' };
      }
      return { text: said.includes('slow question') ? 'answer after the takeover' : 'quick answer' };
    });
    cleanups.push(() => model.close());
    const env = {
      ROSTER_DATA_DIR: dir,
      ROSTER_QUEUE_PREFIX: `test-${randomUUID()}`,
      TELEGRAM_BOT_TOKEN: fake.token,
      TELEGRAM_API_ROOT: fake.apiRoot,
      LOG_LEVEL: 'info',
    };
    expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'answers questions', '--engine', model.engine], env)).code).toBe(0);
    expect((await runRoster(['person', 'add', 'Ada'], env)).code).toBe(0);
    const code = (await runRoster(['person', 'link-code', 'Ada'], env)).stdout.trim();

    // A server hosts the data folder, so that pausing a gateway does not pause the database.
    const server: RunningRoster = startRoster(['server'], { ...env, PORT: String(await freePort()) });
    cleanups.push(() => server.stop());
    await server.waitForOutput(/running at/);
    const first: RunningRoster = startRoster(['gateway'], { ...env, GATEWAY_PORT: String(await freePort()) });
    cleanups.push(async () => {
      first.child.kill('SIGCONT');
      await first.stop();
    });
    await first.waitForOutput(/gateway is running/);
    await until(() => fake.calls.includes('getUpdates'), 'the first gateway to poll Telegram', 60_000);
    const second: RunningRoster = startRoster(['gateway'], { ...env, GATEWAY_PORT: String(await freePort()) });
    cleanups.push(() => second.stop());
    await until(() => /another gateway holds this bot account: standing by/.test(second.output().stderr), 'the second gateway to stand by', 60_000);

    // Control: the first gateway stores and answers while it holds the account.
    const ada = fake.user(2);
    const chat = fake.dmChatId(ada);
    const sentTo = () => fake.sent().filter((message) => message.chatId === chat).map((message) => message.text);
    await fake.command(ada, 'dm', `link ${code}`);
    await until(() => sentTo().length >= 1, 'the link to be answered', 60_000);
    expect(sentTo()).toEqual(['Linked: you are Ada here now.']);

    // A turn under way in the first gateway: its message stored, the model asked; then the gateway is paused past its lease.
    await fake.deliver({ chat: 'dm', from: ada, text: 'a slow question' });
    await until(() => slow === 1, 'the model to be asked the slow question', 60_000);
    first.child.kill('SIGSTOP');
    await until(() => /took over the bot account/.test(second.output().stderr), 'the second gateway to take the bot over', 60_000);
    letAnswer();
    first.child.kill('SIGCONT');
    // The answer reaches the first gateway, which finds its token stale where it would store the reply.
    await until(() => /a turn was refused: this gateway no longer holds the bot account/.test(first.output().stderr), 'the first gateway to refuse its turn', 60_000);

    // The account is the second gateway's: a new question is answered there.
    await fake.deliver({ chat: 'dm', from: ada, text: 'a quick question' });
    await until(() => sentTo().includes('quick answer'), 'the second gateway to answer', 60_000);
    expect(sentTo()).not.toContain('late answer from the paused gateway');
    expect(first.output().stderr).toMatch(/lost the bot account’s lease to another gateway/);

    // What is stored: the question asked before the pause, and the answer the second gateway gave; never the late reply.
    const exported = await runRoster(['person', 'export', 'Ada'], env);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toContain('a slow question');
    expect(exported.stdout).toContain('quick answer');
    expect(exported.stdout).not.toContain('late answer from the paused gateway');
  });
});
