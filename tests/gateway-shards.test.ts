import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { until } from '@roster/channels/testing';
import { createDiscordAdapter } from '@roster/channel-discord';
import { startFakeDiscord, type FakeDiscord } from '@roster/channel-discord/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { endRoster, freePort, runRoster, startRoster, tempDataDir, type RunningRoster } from './support/roster-process.js';

/**
 * Discord's gateway shards, each a lease. The stand-in recommends two shards
 * (GET /gateway/bot), puts one server on each (Discord's rule: shard =
 * (guild_id >> 22) % 2), sends each server's events to the session of its
 * shard, and refuses a second session on a shard already connected (4010):
 * two receivers of one shard would be seen. Two `roster gateway` processes
 * on one database split the shards; when one is killed or stopped, the
 * other takes its shard and answers there.
 */

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

interface Setup {
  env: Record<string, string>;
  fake: FakeDiscord;
  gateway(): Promise<RunningRoster>;
}

async function installation(): Promise<Setup> {
  const dir = tempDataDir();
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
  const fake = await startFakeDiscord({ shards: 2, guilds: 2 });
  cleanups.push(() => fake.close());
  // The gateways say in their log which shards they serve.
  const env = { ROSTER_DATA_DIR: dir, ROSTER_QUEUE_PREFIX: `test-${randomUUID()}`, DISCORD_BOT_TOKEN: fake.token, DISCORD_API_URL: fake.apiUrl, LOG_LEVEL: 'info' };
  for (const args of [
    ['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'],
    ['person', 'add', 'Ada'],
  ]) {
    const result = await runRoster(args, env);
    expect(result.code, result.stderr).toBe(0);
  }
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

/** The Discord accounts (`default shard 1/2`) this gateway's log says it receives now. */
function held(gateway: RunningRoster): string[] {
  const accounts = new Set<string>();
  for (const line of gateway.output().stderr.split('\n')) {
    let entry: { msg?: string; channel?: string; account?: string };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue;
    }
    if (entry.channel !== 'discord' || entry.account === undefined) continue;
    if (entry.msg === 'serving the bot account' || entry.msg === 'took over the bot account') accounts.add(entry.account);
    else if (/^(lost the bot account|another gateway stands for this bot account|the channel stopped receiving)/.test(entry.msg ?? '')) accounts.delete(entry.account);
  }
  const alive = gateway.child.exitCode === null && gateway.child.signalCode === null;
  return alive ? [...accounts].sort() : [];
}

/** Say something to the bot (mentioning it) in a server's #general, and wait for the answer there. */
async function sayIn(fake: FakeDiscord, guild: number, text: string): Promise<string> {
  const { channelId } = fake.guilds[guild]!;
  const before = fake.sent().filter((message) => message.chatId === channelId).length;
  await fake.deliver({ chat: 'group', channelId, from: fake.user(2), text, mentionBot: true });
  await until(() => fake.sent().filter((message) => message.chatId === channelId).length > before, `an answer in server ${guild}`, 60_000);
  return fake.sent().filter((message) => message.chatId === channelId)[before]!.text;
}

/** Two gateways up, each receiving one of the two shards, and Ada linked (through shard 0, which takes direct messages). */
async function splitBetweenTwo(setup: Setup): Promise<[RunningRoster, RunningRoster]> {
  const first = await setup.gateway();
  await until(() => held(first).length === 2, 'the first gateway to take both shards', 60_000);
  const second = await setup.gateway();
  await until(() => held(first).length === 1 && held(second).length === 1, 'the two gateways to split the shards', 60_000);
  await until(() => setup.fake.shards().join() === '0/2,1/2', 'both shards to be connected', 60_000);
  const code = await runRoster(['person', 'link-code', 'Ada'], setup.env);
  const ada = setup.fake.user(2);
  await setup.fake.slash(ada, 'dm', 'link', { code: code.stdout.trim() });
  await until(() => setup.fake.sent().some((message) => message.chatId === setup.fake.dmChatId(ada) && message.text === 'Linked: you are Ada here now.'), 'Ada to be linked', 60_000);
  return [first, second];
}

/** The gateway that receives the server `guild` (by its shard), and the other one. */
function byShardOf(setup: Setup, gateways: RunningRoster[], guild: number): { holder: RunningRoster; other: RunningRoster } {
  const account = `default shard ${setup.fake.guilds[guild]!.shard}/2`;
  const holder = gateways.find((gateway) => held(gateway).includes(account))!;
  expect(holder).toBeDefined();
  return { holder, other: gateways.find((gateway) => gateway !== holder)! };
}

describe('two gateways, one Discord bot on two shards', () => {
  it('each shard is received by exactly one gateway: a message in a server of each shard is answered once; kill -9 of one, and the other takes its shard and answers there', { timeout: 300_000 }, async () => {
    const setup = await installation();
    const { fake } = setup;
    expect(fake.guilds.map((guild) => guild.shard)).toEqual([0, 1]);
    const gateways = await splitBetweenTwo(setup);
    const [a, b] = gateways;
    // Each gateway serves one shard, a different one.
    expect([...held(a), ...held(b)].sort()).toEqual(['default shard 0/2', 'default shard 1/2']);

    expect(await sayIn(fake, 0, 'hello, who is around today?')).toContain("I'm Scout.");
    expect(await sayIn(fake, 1, 'hello, who is around today?')).toContain("I'm Scout.");
    // A later answer in each server shows nothing more came of the first ones: each was answered once.
    expect(await sayIn(fake, 0, 'and who are you?')).toContain("I'm Scout.");
    expect(await sayIn(fake, 1, 'and who are you?')).toContain("I'm Scout.");
    for (const guild of fake.guilds) expect(fake.sent().filter((message) => message.chatId === guild.channelId)).toHaveLength(2);
    // No second session was ever opened on a shard.
    expect(fake.refusedIdentifies()).toEqual([]);

    // The gateway of server 1's shard is killed outright: its lease lapses, and the other takes that shard too.
    const { holder, other } = byShardOf(setup, gateways, 1);
    const killedAt = Date.now();
    holder.child.kill('SIGKILL');
    await until(() => held(other).length === 2, 'the other gateway to take the killed one’s shard', 120_000);
    const tookOverMs = Date.now() - killedAt;
    await until(() => fake.shards().join() === '0/2,1/2', 'the shard to be connected again', 60_000);
    expect(await sayIn(fake, 1, 'hello again, who is around?')).toContain("I'm Scout.");
    expect(await sayIn(fake, 0, 'hello again, who is around?')).toContain("I'm Scout.");
    for (const guild of fake.guilds) expect(fake.sent().filter((message) => message.chatId === guild.channelId)).toHaveLength(3);
    expect(fake.refusedIdentifies()).toEqual([]);
    console.info(`Discord shard taken over ${(tookOverMs / 1000).toFixed(1)} s after kill -9 of its gateway`);
  });

  it('SIGTERM of one gateway: the other takes its shard at once (the lease released, not lapsed) and answers there', { timeout: 300_000 }, async () => {
    const setup = await installation();
    const { fake } = setup;
    const gateways = await splitBetweenTwo(setup);
    // Told in direct messages (shard 0), kept for Ada.
    const ada = fake.user(2);
    await fake.deliver({ chat: 'dm', from: ada, text: 'remember that locker 4 holds parcel 28' });
    await until(() => fake.sent().some((message) => message.chatId === fake.dmChatId(ada) && message.text === 'Noted: locker 4 holds parcel 28'), 'the fact to be noted', 60_000);

    const { holder, other } = byShardOf(setup, gateways, 0);
    const stoppedAt = Date.now();
    expect(await holder.stop()).toBe(0);
    const stopMs = Date.now() - stoppedAt;
    await until(() => held(other).length === 2, 'the other gateway to take the stopped one’s shard', 60_000);
    const tookOverMs = Date.now() - stoppedAt;
    await until(() => fake.shards().join() === '0/2,1/2', 'the shard to be connected again', 60_000);
    expect(await sayIn(fake, 0, 'hello, who is around today?')).toContain("I'm Scout.");
    // Direct messages come to shard 0: the other gateway, holding it now, answers them too, from the same memory.
    await fake.deliver({ chat: 'dm', from: ada, text: 'what do you know about locker 4?' });
    await until(() => fake.sent().some((message) => message.chatId === fake.dmChatId(ada) && message.text.includes('locker 4 holds parcel 28')), 'an answer in direct messages through the new holder of shard 0', 60_000);
    expect(fake.refusedIdentifies()).toEqual([]);
    console.info(`Discord shard taken over ${(tookOverMs / 1000).toFixed(1)} s after SIGTERM of its gateway (which took ${(stopMs / 1000).toFixed(1)} s to stop)`);
  });

  it('control: two sessions of one bot on the same shard, without a lease, and the stand-in refuses the second as Discord does', { timeout: 120_000 }, async () => {
    const fake = await startFakeDiscord({ shards: 2, guilds: 2 });
    cleanups.push(() => fake.close());
    const abort = new AbortController();
    const start = { signal: abort.signal, onMessage: () => {}, onApprovalPress: async () => ({ text: '', decided: false }) };
    const first = createDiscordAdapter({ token: fake.token, apiUrl: fake.apiUrl, shard: { id: 1, count: 2 } });
    const second = createDiscordAdapter({ token: fake.token, apiUrl: fake.apiUrl, shard: { id: 1, count: 2 } });
    cleanups.push(async () => {
      abort.abort();
      await Promise.allSettled([first.stop(), second.stop()]);
    });
    // Positive control: one session on shard 1 is taken.
    await first.start(start);
    expect(fake.shards()).toEqual(['1/2']);
    // The second on the same shard is refused, and says why.
    await expect(second.start(start)).rejects.toThrow(/4010/);
    expect(fake.refusedIdentifies()).toEqual(['1/2']);
    expect(fake.shards()).toEqual(['1/2']);
  });
});
