import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { until } from '@roster/channels/testing';
import { startFakeTelegram } from '@roster/channel-telegram/testing';
import { connectionFromUrl, createQueues } from '@roster/jobs';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { requireServerUrl, serverInstallation } from '../support/installation.js';
import { startPgBouncer, type PgBouncer } from '../support/pgbouncer.js';
import { endRoster, freePort, runRoster, startRoster, type RunningRoster } from '../support/roster-process.js';
import { repliesIn } from '../support/replies.js';

/**
 * Roster through PgBouncer in transaction pooling mode: each transaction may
 * run on another server connection, so nothing may rely on session state (a
 * SET, a session advisory lock, a named prepared statement, LISTEN) outside a
 * transaction. The processes reach the server Postgres only through it.
 */
const adminUrl = requireServerUrl();
const migrationCount = fs.readdirSync(fileURLToPath(new URL('../../migrations', import.meta.url))).filter((name) => /^\d+_.*\.sql$/.test(name)).length;

let bouncer: PgBouncer;
beforeAll(async () => {
  bouncer = await startPgBouncer(adminUrl);
});
afterAll(async () => {
  await bouncer?.stop();
});

describe('Roster behind PgBouncer in transaction pooling mode', () => {
  it('migrates (twice at once), starts, chats, forgets, runs and relays jobs, and hands a bot account over by lease', { timeout: 300_000 }, async () => {
    const installation = await serverInstallation(adminUrl);
    onTestFinished(() => installation.remove());
    const fake = await startFakeTelegram();
    onTestFinished(() => fake.close());
    const env = {
      ...installation.env,
      DATABASE_URL: bouncer.through(installation.env.DATABASE_URL!),
      TELEGRAM_BOT_TOKEN: fake.token,
      TELEGRAM_API_ROOT: fake.apiRoot,
      // The gateways say in their log whether they serve the bot or stand by.
      LOG_LEVEL: 'info',
    };
    const roster = async (...args: string[]) => {
      const result = await runRoster(args, env, 120_000);
      expect(result.code, `${args.join(' ')}\n${result.stderr}`).toBe(0);
      return result.stdout.trim();
    };

    // Two migrations at once: the lock is transaction-scoped, so each migration is applied once.
    const migrations = await Promise.all([runRoster(['migrate'], env, 120_000), runRoster(['migrate'], env, 120_000)]);
    for (const result of migrations) expect(result.code, result.stderr).toBe(0);
    const database = await installation.openDatabase();
    onTestFinished(() => database.close());
    const ledger = await database.ownerScope('test: read the ledger', (tx) => tx.query<{ version: number }>('select version from roster_migrations order by version'));
    expect(ledger.rows.map((row) => row.version)).toEqual(Array.from({ length: migrationCount }, (_, index) => index + 1));

    await roster('agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources');
    await roster('person', 'add', 'Ada');
    const code = await roster('person', 'link-code', 'Ada');

    // One process of each part, and a second gateway standing by.
    const port = await freePort();
    const first: RunningRoster = startRoster(['start'], { ...env, PORT: String(port) });
    onTestFinished(() => endRoster(first));
    await first.waitForOutput(/running at \S+ \(server database/);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ ok: true, database: 'server', writes: 'ok', redis: 'ok' });
    await until(() => fake.calls.includes('getUpdates'), 'the gateway to poll Telegram', 60_000);
    const second: RunningRoster = startRoster(['gateway'], { ...env, GATEWAY_PORT: String(await freePort()) });
    onTestFinished(() => endRoster(second));
    await until(() => /another gateway holds this bot account: standing by/.test(second.output().stderr), 'the second gateway to stand by', 60_000);

    // Chat and forget, through the bot.
    const ada = fake.user(2);
    const chat = fake.dmChatId(ada);
    await fake.command(ada, 'dm', `link ${code}`);
    expect(await repliesIn(fake, chat, 1)).toEqual(['Linked: you are Ada here now.']);
    await fake.deliver({ chat: 'dm', from: ada, text: 'remember that my locker is number 12' });
    expect((await repliesIn(fake, chat, 2))[1]).toBe('Noted: your locker is number 12');
    await fake.deliver({ chat: 'dm', from: ada, text: 'remember that my bike is green' });
    expect((await repliesIn(fake, chat, 3))[2]).toBe('Noted: your bike is green');
    await fake.deliver({ chat: 'dm', from: ada, text: 'forget that my locker is number 12' });
    expect((await repliesIn(fake, chat, 4))[3]).toBe('Forgotten.');

    // roster doctor, through PgBouncer too, names the gateway holding the bot.
    const doctor = JSON.parse(await runRoster(['doctor', '--json'], env).then((result) => result.stdout)) as { checks: Array<{ name: string; status: string; detail: string }> };
    expect(doctor.checks.find((check) => check.name === 'telegram')).toMatchObject({ status: 'ok', detail: expect.stringMatching(/received by \S+ since /) });
    expect(doctor.checks.find((check) => check.name === 'migrations')).toMatchObject({ status: 'ok' });

    // The jobs: every turn's outbox row relayed and run; the erase the forget queued, run by hand and waited for.
    const outbox = async () =>
      (await database.adminScope('test: read the outbox', (tx) => tx.query<{ id: string; queue: string; relayed: boolean }>(`select id, queue, relayed_at is not null as relayed from outbox where queue <> 'erase'`))).rows;
    await until(async () => {
      const rows = await outbox();
      return rows.some((row) => row.queue === 'extract') && rows.every((row) => row.relayed);
    }, 'every outbox row relayed', 60_000);
    const rows = await outbox();
    const queues = createQueues(connectionFromUrl(installation.redisUrl), installation.prefix);
    onTestFinished(() => queues.close());
    await until(
      async () => {
        for (const row of rows) if ((await queues.queues[row.queue as 'extract'].getJobState(row.id)) !== 'completed') return false;
        return true;
      },
      'every relayed job completed',
      120_000,
    );
    expect(await roster('jobs', 'run', 'erase', '--wait', '--timeout', '100')).toMatch(/^erase done: .*"database":"server"/);
    expect(await roster('jobs', 'run', 'fade', '--wait', '--timeout', '100')).toMatch(/^fade done: \{/);

    // A rolling deploy: the first stops, the second takes the bot over, and answers from the same memory.
    expect(await first.stop()).toBe(0);
    await until(() => /took over the bot account/.test(second.output().stderr), 'the second gateway to take the bot over', 60_000);
    await fake.deliver({ chat: 'dm', from: ada, text: 'what do you know about my bike?' });
    expect((await repliesIn(fake, chat, 5))[4]).toContain('your bike is green');
    await fake.deliver({ chat: 'dm', from: ada, text: 'what do you know about my locker?' });
    expect((await repliesIn(fake, chat, 6))[5]).not.toContain('number 12');
    const kept = await database.adminScope('test: what is kept', async (tx) => ({
      locker: (await tx.query(`select 1 from facts where content like '%locker is number 12%'`)).rows.length,
      bike: (await tx.query(`select 1 from facts where content = 'my bike is green'`)).rows.length,
    }));
    expect(kept).toEqual({ locker: 0, bike: 1 });

    // All of it went through PgBouncer: its statistics count the installation's transactions.
    const stats = await bouncer.admin('SHOW STATS');
    const name = new URL(installation.env.DATABASE_URL!).pathname.slice(1);
    expect(Number(stats.find((row) => row.database === name)?.total_xact_count ?? 0)).toBeGreaterThan(50);
  });

  it('control: it is transaction pooling, where two clients share one server session in turn, so a session’s state does not stay its own', async () => {
    expect((await bouncer.admin('SHOW CONFIG')).find((row) => row.key === 'pool_mode')).toMatchObject({ value: 'transaction' });
    const url = new URL(bouncer.through(adminUrl));
    const clients = [new pg.Client({ connectionString: url.toString() }), new pg.Client({ connectionString: url.toString() })];
    for (const client of clients) await client.connect();
    onTestFinished(async () => {
      await Promise.all(clients.map((client) => client.end()));
    });
    const [one, two] = clients as [pg.Client, pg.Client];
    // A session advisory lock taken by one client, both still connected: the other takes it too, on the same server session.
    const pid = (await one.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
    expect((await one.query<{ taken: boolean }>('select pg_try_advisory_lock(4242) as taken')).rows[0]!.taken).toBe(true);
    expect((await two.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid).toBe(pid);
    expect((await two.query<{ taken: boolean }>('select pg_try_advisory_lock(4242) as taken')).rows[0]!.taken).toBe(true);
    await two.query('select pg_advisory_unlock_all()');
    // Directly on the server, two sessions are two: the lock would keep the other out.
    const direct = [new pg.Client({ connectionString: adminUrl }), new pg.Client({ connectionString: adminUrl })];
    for (const client of direct) await client.connect();
    onTestFinished(async () => {
      await Promise.all(direct.map((client) => client.end()));
    });
    expect((await direct[0]!.query<{ taken: boolean }>('select pg_try_advisory_lock(4242) as taken')).rows[0]!.taken).toBe(true);
    expect((await direct[1]!.query<{ taken: boolean }>('select pg_try_advisory_lock(4242) as taken')).rows[0]!.taken).toBe(false);
  });
});
