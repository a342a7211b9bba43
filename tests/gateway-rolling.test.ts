import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { until } from '@roster/channels/testing';
import { startFakeTelegram, type FakeTelegram } from '@roster/channel-telegram/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { endRoster, freePort, runRoster, startRoster, tempDataDir, type RunningRoster } from './support/roster-process.js';

/**
 * Gateways as a service runs them: three on one database, restarted one at a
 * time while people write (a rolling deploy), and one killed outright. The
 * Telegram stand-in hands updates to one long poll at a time, answers a
 * superseded poll 409, and hands an update that was not confirmed (the next
 * poll's offset) to the next poller again, as Telegram does.
 */

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

interface Installation {
  env: Record<string, string>;
  fake: FakeTelegram;
  gateway(): Promise<RunningRoster>;
}

/** A data folder with an agent and Ada, a Telegram stand-in, and a way to start gateways on them. */
async function installation(): Promise<Installation> {
  const dir = tempDataDir();
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
  const fake = await startFakeTelegram();
  cleanups.push(() => fake.close());
  const env = {
    ROSTER_DATA_DIR: dir,
    ROSTER_QUEUE_PREFIX: `test-${randomUUID()}`,
    TELEGRAM_BOT_TOKEN: fake.token,
    TELEGRAM_API_ROOT: fake.apiRoot,
    // Each gateway says in its log whether it serves the bot or stands by.
    LOG_LEVEL: 'info',
  };
  expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env)).code).toBe(0);
  expect((await runRoster(['person', 'add', 'Ada'], env)).code).toBe(0);
  return {
    env,
    fake,
    async gateway() {
      const gateway = startRoster(['gateway'], { ...env, GATEWAY_PORT: String(await freePort()) });
      cleanups.push(() => endRoster(gateway));
      await gateway.waitForOutput(/gateway is running/);
      return gateway;
    },
  };
}

/** Whether this gateway's log says it serves the bot now (it took the lease, at start or later). */
function serving(gateway: RunningRoster): boolean {
  const log = gateway.output().stderr;
  const took = Math.max(log.lastIndexOf('serving the bot account'), log.lastIndexOf('took over the bot account'));
  const lost = log.lastIndexOf('lost the bot account');
  return took > lost && gateway.child.exitCode === null && gateway.child.signalCode === null;
}

/** Link a person's Telegram account (the n-th user of the stand-in) through a running gateway. */
async function link(setup: Installation, name: string, n: number) {
  const user = setup.fake.user(n);
  if (name !== 'Ada') expect((await runRoster(['person', 'add', name], setup.env)).code).toBe(0);
  const code = await runRoster(['person', 'link-code', name], setup.env);
  await setup.fake.command(user, 'dm', `link ${code.stdout.trim()}`);
  await until(() => setup.fake.sent().some((message) => message.chatId === setup.fake.dmChatId(user) && message.text === `Linked: you are ${name} here now.`), `${name}'s link to be confirmed`, 120_000);
  return user;
}

/** The replies in these chats, counted by the fact each one notes ("locker N holds parcel M"). */
function repliesByLocker(fake: FakeTelegram, chatIds: string[]): Map<number, number> {
  const counted = new Map<number, number>();
  for (const message of fake.sent().filter((sent) => chatIds.includes(sent.chatId))) {
    const locker = /locker (\d+) holds parcel/.exec(message.text)?.[1];
    if (locker !== undefined) counted.set(Number(locker), (counted.get(Number(locker)) ?? 0) + 1);
  }
  return counted;
}

describe('three gateways on one Telegram bot', () => {
  it('a rolling restart of every gateway while 200 messages from ten people flow answers each message exactly once and loses none', { timeout: 1_500_000 }, async () => {
    const setup = await installation();
    const gateways = [await setup.gateway(), await setup.gateway(), await setup.gateway()];
    const everyGateway = [...gateways];
    // Ten people write twenty messages each (a person may send twenty a minute).
    const people = ['Ada', 'Bea', 'Cy', 'Dov', 'Eli', 'Fay', 'Gus', 'Hal', 'Ivy', 'Jo'];
    const users = [];
    for (const [index, name] of people.entries()) users.push(await link(setup, name, index + 2));
    const chatIds = users.map((user) => setup.fake.dmChatId(user));
    const total = 200;

    // Each person writes their next message once the last one was answered, as people do; the restarts run beside them.
    let delivered = 0;
    const flow = Promise.all(
      users.map(async (user, index) => {
        for (let n = index + 1; n <= total; n += users.length) {
          await setup.fake.deliver({ chat: 'dm', from: user, text: `remember that locker ${n} holds parcel ${n * 7}` });
          delivered += 1;
          // A message never answered is reported below, with every other one; this person goes on.
          await until(() => repliesByLocker(setup.fake, [chatIds[index]!]).has(n), `the answer to message ${n}`, 120_000).catch(() => undefined);
        }
      }),
    );
    for (let index = 0; index < gateways.length; index += 1) {
      // Restart each gateway in turn once some messages have gone out since the last restart.
      const mark = delivered;
      await until(() => delivered >= Math.min(total, mark + 30), `messages to flow before restart ${index + 1}`, 300_000);
      const old = gateways[index]!;
      const held = serving(old);
      expect(await old.stop()).toBe(0);
      gateways[index] = await setup.gateway();
      everyGateway.push(gateways[index]!);
      // When the one stopped held the bot, another took it over.
      if (held) await until(() => gateways.some(serving), 'another gateway to take the bot over', 120_000);
    }
    await flow;

    // Waited for as long as answers keep coming (a busy machine answers slowly); two minutes without a new one is a stall.
    for (let seen = -1, since = Date.now(); repliesByLocker(setup.fake, chatIds).size < total && Date.now() - since < 120_000; ) {
      const now = repliesByLocker(setup.fake, chatIds).size;
      if (now !== seen) [seen, since] = [now, Date.now()];
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const counted = repliesByLocker(setup.fake, chatIds);
    const missing = Array.from({ length: total }, (_, index) => index + 1).filter((locker) => !counted.has(locker));
    const others = setup.fake.sent().filter((sent) => chatIds.includes(sent.chatId) && !/locker \d+ holds parcel|^Linked: /.test(sent.text)).map((sent) => sent.text);
    expect(missing, `messages never answered; other replies: ${JSON.stringify(others)}; the gateways said:\n${gateways.map((gateway) => gateway.output().stderr).join('\n')}`).toEqual([]);
    const twice = [...counted].filter(([, count]) => count > 1).map(([locker]) => locker);
    expect(twice, 'messages answered more than once').toEqual([]);
    expect([...counted.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: total }, (_, index) => index + 1));
    // Exactly one gateway served the bot at each moment: none says another's poll cut it off.
    for (const gateway of everyGateway) expect(gateway.output().stderr).not.toMatch(/Telegram polling stopped|another poller/);
    // Every fact is stored once, with the person who said it.
    let facts = 0;
    for (const name of people) {
      const listed = await runRoster(['memory', 'list', '--agent', 'Scout', '--person', name, '--json'], setup.env);
      expect(listed.code, listed.stderr).toBe(0);
      facts += (JSON.parse(listed.stdout) as Array<{ content: string }>).filter((fact) => /^locker \d+ holds parcel/.test(fact.content)).length;
    }
    expect(facts).toBe(total);
  });

  it('kill -9 of the gateway that serves the bot: another takes it over once the lease lapses, and answers from the same memory', { timeout: 300_000 }, async () => {
    const setup = await installation();
    const gateways = [await setup.gateway(), await setup.gateway()];
    const ada = await link(setup, 'Ada', 2);
    const chatId = setup.fake.dmChatId(ada);
    await setup.fake.deliver({ chat: 'dm', from: ada, text: 'remember that locker 12 holds parcel 84' });
    await until(() => repliesByLocker(setup.fake, [chatId]).get(12) === 1, 'the first fact to be noted', 120_000);

    const holder = gateways.find(serving)!;
    const standby = gateways.find((gateway) => gateway !== holder)!;
    expect(holder).toBeDefined();
    expect(serving(standby)).toBe(false);
    holder.child.kill('SIGKILL');
    await until(() => serving(standby), 'the standby to take the bot over', 120_000);
    await setup.fake.deliver({ chat: 'dm', from: ada, text: 'what do you know about locker 12?' });
    await until(() => setup.fake.sent().filter((message) => message.chatId === chatId).length >= 3, 'an answer after the takeover', 120_000);
    expect(setup.fake.sent().at(-1)!.text).toContain('locker 12 holds parcel 84');
    expect(standby.output().stderr).not.toMatch(/Telegram polling stopped|another poller/);
  });
});
