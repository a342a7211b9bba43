/**
 * What two of each process on one database and one Redis must keep, checked
 * on any installation: tests/scale-out.test.ts runs these on the embedded
 * database, tests/server/scale-out.test.ts on a server Postgres.
 */
import { randomUUID } from 'node:crypto';
import { until } from '@roster/channels/testing';
import { connectionFromUrl, createQueues, jobNames } from '@roster/jobs';
import { Redis } from 'ioredis';
import { expect, onTestFinished } from 'vitest';
import { startFakeTelegram } from '@roster/channel-telegram/testing';
import type { TestInstallation } from './installation.js';
import { endRoster, freePort, runRoster, signInThrough, startListening, startRoster, type RunningRoster } from './roster-process.js';

/** A new installation, removed when the test ends. */
async function useInstallation(open: () => Promise<TestInstallation>): Promise<TestInstallation> {
  const installation = await open();
  onTestFinished(() => installation.remove());
  return installation;
}

/** `roster start` on the installation, on a free port, ended when the test ends; it says it runs on the installation's database. */
async function start(installation: TestInstallation): Promise<{ roster: RunningRoster; address: string }> {
  const started = await startListening(installation.env);
  onTestFinished(() => endRoster(started.roster));
  expect(started.roster.output().stdout).toContain(`(${installation.kind} database`);
  return started;
}

/** Two `roster start` (each a server, a worker and a gateway): one conversation's turns stay in order, every job runs once, each schedule exists once. */
export async function oneConversationOverTwoProcesses(open: () => Promise<TestInstallation>): Promise<void> {
  const installation = await useInstallation(open);
  const { env, prefix } = installation;
  expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env)).code).toBe(0);
  // Each `roster start` is a server, a worker and a gateway: two of each.
  const one = await start(installation);
  const two = await start(installation);
  const redis = new Redis(installation.redisUrl);
  onTestFinished(async () => {
    await redis.quit();
  });

  // One person, signed in once: the session is in the shared database, so both servers take it.
  await one.roster.waitForOutput(/Made the first owner/);
  const { cookie, csrfToken } = await signInThrough(one.address, env);
  const say = async (address: string, message: string) => {
    const response = await fetch(`${address}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrfToken },
      body: JSON.stringify({ agent: 'Scout', message, id: randomUUID() }),
    });
    const body = await response.text();
    expect(response.status, body).toBe(200);
    expect(body).toContain('event: turn-end');
    return body;
  };

  // Eight messages to one conversation, four at a time, two through each server (a person streams at most two replies per server).
  const said = Array.from({ length: 8 }, (_, index) => `Note ${index + 1}: the ferry leaves from pier ${index + 1}.`);
  for (const round of [said.slice(0, 4), said.slice(4)]) await Promise.all(round.map((message, index) => say(index % 2 === 0 ? one.address : two.address, message)));
  const history = (await (await fetch(`${two.address}/api/chat/history`, { headers: { cookie } })).json()) as { messages: Array<{ role: string; text: string }> };
  const lines = history.messages.filter((line) => line.role !== 'system');
  // In order: each message, then its one reply, never another turn in between.
  expect(lines.map((line) => line.role)).toEqual(said.flatMap(() => ['person', 'agent']));
  expect(lines.filter((line) => line.role === 'person').map((line) => line.text).sort()).toEqual([...said].sort());

  // Every job the turns queued is relayed once, by one worker or the other, and run once.
  const database = await installation.openDatabase();
  onTestFinished(() => database.close());
  const outbox = async () =>
    (await database.adminScope('test: read the outbox', (tx) => tx.query<{ id: string; queue: string; relayed: boolean }>(`select id, queue, relayed_at is not null as relayed from outbox where queue <> 'erase'`))).rows;
  await until(async () => (await outbox()).every((row) => row.relayed), 'every outbox row relayed', 60_000);
  const rows = await outbox();
  expect(rows.filter((row) => row.queue === 'extract').length).toBeGreaterThanOrEqual(8);
  const queues = createQueues(connectionFromUrl(installation.redisUrl), prefix);
  onTestFinished(() => queues.close());
  await until(
    async () => {
      for (const row of rows) if ((await queues.queues[row.queue as 'extract'].getJobState(row.id)) !== 'completed') return false;
      return true;
    },
    'every relayed job completed',
    90_000,
  );
  for (const row of rows) {
    const job = (await queues.queues[row.queue as 'extract'].getJob(row.id))!;
    // One attempt, and no job of another id for the same row.
    expect(job.attemptsMade, `${row.queue} ${row.id}`).toBe(1);
  }
  let jobs = 0;
  for (const name of jobNames) jobs += (await queues.queues[name].getJobs(['completed', 'failed', 'active', 'waiting'])).filter((job) => !job.id!.startsWith('repeat:')).length;
  expect(jobs).toBe(rows.length);

  // Each schedule once, though both workers registered it.
  for (const [queue, id] of [
    ['fade', 'nightly-fade'],
    ['harvest', 'nightly-harvest'],
    ['review', 'nightly-review'],
    ['mirror', 'nightly-mirror'],
    ['extract', 'idle-extract'],
    ['episodes', 'idle-episodes'],
    ['vacuum', 'every-vacuum'],
  ] as const) {
    expect(await redis.zrange(`${prefix}:${queue}:repeat`, 0, -1), queue).toEqual([id]);
    expect((await queues.queues[queue].getDelayed()).filter((job) => job.repeatJobKey === id), queue).toHaveLength(1);
  }
}

/** Two servers behind one Telegram webhook: an update that reaches both (a redelivery landing on the other server) is answered once and kept once. */
export async function oneUpdateToTwoServers(open: () => Promise<TestInstallation>): Promise<void> {
  const installation = await useInstallation(open);
  const fake = await startFakeTelegram();
  onTestFinished(() => fake.close());
  const ports = [await freePort(), await freePort()];
  // The public address Telegram posts to is the first server's; a load balancer could as well send a retry to the second.
  const webhook = `http://127.0.0.1:${ports[0]}/telegram/webhook`;
  const env = { ...installation.env, TELEGRAM_API_ROOT: fake.apiRoot, TELEGRAM_BOT_TOKEN: fake.token, TELEGRAM_WEBHOOK_URL: webhook };
  for (const command of [['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], ['person', 'add', 'Ada']]) {
    const result = await runRoster(command, env);
    expect(result.code, result.stderr).toBe(0);
  }
  const servers = ports.map((port) => {
    const roster = startRoster(['start'], { ...env, PORT: String(port) });
    onTestFinished(() => endRoster(roster));
    return roster;
  });
  for (const roster of servers) expect((await roster.waitForOutput(/running at \S+ \((\w+) database/))[1]).toBe(installation.kind);
  await until(() => fake.webhook() !== null, 'the gateways to set the webhook', 30_000);

  const ada = fake.user(2);
  const code = await runRoster(['person', 'link-code', 'Ada'], env);
  await fake.command(ada, 'dm', `link ${code.stdout.trim()}`);
  await until(() => fake.sent().some((message) => message.chatId === fake.dmChatId(ada)), 'the link to be answered', 30_000);

  // One update, posted to both servers at once, each with Telegram's secret header.
  const update = {
    update_id: 501,
    message: { message_id: 501, date: Math.floor(Date.now() / 1000), chat: { id: Number(ada.id), type: 'private' }, from: { id: Number(ada.id), is_bot: false, first_name: 'Ada' }, text: 'remember that my locker is number 31' },
  };
  const post = (port: number) =>
    fetch(`http://127.0.0.1:${port}/telegram/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': fake.webhook()!.secretToken! },
      body: JSON.stringify(update),
    }).then((response) => response.status);
  expect(await Promise.all(ports.map(post))).toEqual([200, 200]);
  // Once more to the second, later, as Telegram retries.
  await until(() => fake.sent().filter((message) => message.chatId === fake.dmChatId(ada)).length >= 2, 'the reply', 30_000);
  expect(await post(ports[1]!)).toBe(200);
  // A later message is answered, so anything the duplicates would have sent has been sent by then.
  await fake.deliver({ chat: 'dm', from: ada, text: 'what do you know about my locker?' });
  await until(() => fake.sent().filter((message) => message.chatId === fake.dmChatId(ada)).length >= 3, 'the answer to the question', 30_000);
  const replies = fake
    .sent()
    .filter((message) => message.chatId === fake.dmChatId(ada))
    .map((message) => message.text);
  expect(replies.slice(1, 3)).toEqual(['Noted: your locker is number 31', expect.stringContaining('your locker is number 31')]);
  expect(replies).toHaveLength(3);

  for (const roster of servers) expect(await roster.stop()).toBe(0);
  const database = await installation.openDatabase();
  onTestFinished(() => database.close());
  const kept = await database.adminScope('test: read what was kept', async (tx) => ({
    messages: (await tx.query(`select 1 from messages where content = 'remember that my locker is number 31'`)).rows.length,
    replies: (await tx.query(`select 1 from messages where content = 'Noted: your locker is number 31'`)).rows.length,
    facts: (await tx.query(`select 1 from facts where content = 'my locker is number 31'`)).rows.length,
  }));
  expect(kept).toEqual({ messages: 1, replies: 1, facts: 1 });
}
