import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFakeTelegram } from '@roster/channel-telegram/testing';
import { until } from '@roster/channels/testing';
import { connectionFromUrl, createQueues, jobNames } from '@roster/jobs';
import { afterEach, describe, expect, it } from 'vitest';
import { endRoster, freePort, runRoster, startListening, startRoster, tempDataDir } from './support/roster-process.js';

/**
 * GET /metrics of the real `roster start` (server, worker and gateway in
 * one process): turns through the API and through a Telegram stand-in are
 * counted by door and engine as they end; queue depth, the outbox's backlog
 * and the bot accounts' states are read when scraped. Only an owner reads
 * it on the public port; METRICS_PORT serves it on loopback alone.
 */

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (comments skipped). */
function samples(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (match === null) throw new Error(`not a sample line: ${line}`);
      const labels: Record<string, string> = {};
      for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!;
      return { name: match[1]!, labels, value: Number(match[3]) };
    });
}

/** The value of the one sample of `name` whose labels include `labels`, or 0 when there is none. */
function valueOf(text: string, name: string, labels: Record<string, string> = {}): number {
  const found = samples(text).filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels)}`);
  return found[0]?.value ?? 0;
}

/** A data folder and a queue prefix of this test alone, both removed when it ends. */
function freshInstallation(): { dir: string; prefix: string } {
  const dir = tempDataDir();
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const prefix = `test-${randomUUID()}`;
  cleanups.push(async () => {
    const queues = createQueues(connectionFromUrl(redisUrl), prefix);
    for (const name of jobNames) await queues.queues[name].obliterate({ force: true });
    await queues.close();
  });
  return { dir, prefix };
}

/** A model server that lists its model and refuses every chat (400), as a misconfigured provider does: the far side of an engine failure. */
async function startRefusingModel(): Promise<{ engine: string; port: number; close(): Promise<void> }> {
  const server = http.createServer((request, response) => {
    request.resume();
    response.writeHead(request.method === 'GET' ? 200 : 400, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify(
        request.method === 'GET'
          ? { object: 'list', data: [{ id: 'refusing-model', object: 'model', created: 1_700_000_000, owned_by: 'test' }] }
          : { error: { message: 'This model does not take requests.', type: 'invalid_request_error' } },
      ),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { engine: `openai-compatible:http://127.0.0.1:${port}/v1#refusing-model`, port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('GET /metrics', () => {
  it('counts turns by door and engine, reads queues, outbox and accounts at scrape time, and answers only an owner (or loopback METRICS_PORT)', { timeout: 300_000 }, async () => {
    const { dir, prefix } = freshInstallation();
    const telegram = await startFakeTelegram();
    cleanups.push(() => telegram.close());
    const refusing = await startRefusingModel();
    cleanups.push(() => refusing.close());
    const metricsPort = await freePort();
    const env = {
      ROSTER_DATA_DIR: dir,
      REDIS_URL: redisUrl,
      ROSTER_QUEUE_PREFIX: prefix,
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_API_ROOT: telegram.apiRoot,
      METRICS_PORT: String(metricsPort),
    };
    const roster = async (...args: string[]) => {
      const result = await runRoster(args, env, 120_000);
      expect(result.code, `roster ${args.join(' ')}\n${result.stdout}\n${result.stderr}`).toBe(0);
      return result.stdout.trim();
    };

    const { roster: running, address } = await startListening(env);
    cleanups.push(() => endRoster(running));
    expect(running.output().stdout).toContain(`Metrics at http://127.0.0.1:${metricsPort}/metrics`);
    const signIn = async (as: string) => {
      const link = await roster('login-link', '--as', as);
      const login = await fetch(`${address}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: new URL(link).hash.slice(1) }) });
      expect(login.status).toBe(200);
      return { cookie: login.headers.get('set-cookie')!.split(';')[0]!, csrfToken: ((await login.json()) as { csrfToken: string }).csrfToken };
    };
    await roster('person', 'add', 'Ada', '--role', 'owner');
    await roster('person', 'add', 'Bob');
    await roster('person', 'add', 'Pia');
    await roster('agent', 'add', '--name', 'Scout', '--job', 'keeps notes');
    const owner = await signIn('Ada');
    const member = await signIn('Bob');
    const scrape = async (headers: Record<string, string> = { cookie: owner.cookie }) => {
      const response = await fetch(`${address}/metrics`, { headers });
      expect(response.status, await response.clone().text()).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      return response.text();
    };

    // Who may read it: no credential 401, a member 403, an owner's session or API token 200.
    expect((await fetch(`${address}/metrics`)).status).toBe(401);
    expect((await fetch(`${address}/metrics`, { headers: { authorization: 'Bearer rst_not-a-token' } })).status).toBe(401);
    expect((await fetch(`${address}/metrics`, { headers: { cookie: member.cookie } })).status).toBe(403);
    const made = await fetch(`${address}/api/tokens`, {
      method: 'POST',
      headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrfToken, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'prometheus' }),
    });
    expect(made.status).toBe(201);
    const token = ((await made.json()) as { token: string }).token;
    const before = await scrape({ authorization: `Bearer ${token}` });
    const web = { door: 'web', engine: 'offline', outcome: 'answered' };
    const webBefore = valueOf(before, 'roster_turns_total', web);

    // Two turns on the page's door, one through Telegram (after a link code, which is a refused turn: nothing kept), one at the CLI.
    const words = ['remember that my kayak is called Zephyrine', 'remember that my tent is striped mauve'];
    const chat = async (agent: string, message: string) => {
      const response = await fetch(`${address}/api/chat`, {
        method: 'POST',
        headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrfToken, 'content-type': 'application/json' },
        body: JSON.stringify({ agent, message }),
      });
      expect(response.status).toBe(200);
      const stream = await response.text();
      expect(stream).toContain('event: done');
      return stream;
    };
    for (const message of words) await chat('Scout', message);
    await until(() => telegram.calls.includes('getUpdates'), 'the gateway to poll Telegram', 30_000);
    const pia = telegram.user(3);
    await telegram.command(pia, 'dm', `link ${await roster('person', 'link-code', 'Pia')}`);
    await until(() => telegram.sent().some((sent) => sent.text === 'Linked: you are Pia here now.'), 'the link to be answered', 30_000);
    await telegram.deliver({ chat: 'dm', from: pia, text: 'remember that my violin is amber quokka' });
    await until(() => telegram.sent().some((sent) => sent.text === 'Noted: your violin is amber quokka'), 'the Telegram turn to be answered', 30_000);
    expect(await roster('chat', '--agent', 'Scout', '--as', 'Ada', 'remember that my lamp is teal')).toBe('Noted: your lamp is teal');
    // And one on the page whose engine fails: the person is told, and it is an engine failure, not an answer.
    await roster('agent', 'add', '--name', 'Broken', '--job', 'fails', '--engine', refusing.engine);
    expect(await chat('Broken', 'remember that my oboe is lilac')).toContain('Broken could not answer');

    const after = await scrape();
    // Turns: exactly the two of the page, the Telegram one; the CLI's ran in its own process, not this one.
    expect(valueOf(after, 'roster_turns_total', web) - webBefore).toBe(2);
    expect(valueOf(after, 'roster_turns_total', { door: 'telegram', engine: 'offline', outcome: 'answered' })).toBe(1);
    expect(valueOf(after, 'roster_turns_total', { door: 'telegram', engine: 'none', outcome: 'refused' })).toBe(1);
    expect(valueOf(after, 'roster_turns_total', { door: 'cli' })).toBe(0);
    const broken = { door: 'web', engine: 'openai-compatible:refusing-model' };
    expect(valueOf(after, 'roster_turns_total', { ...broken, outcome: 'engine_failed' })).toBe(1);
    expect(valueOf(after, 'roster_turns_total', { ...broken, outcome: 'answered' })).toBe(0);
    const failures = samples(after).filter((sample) => sample.name === 'roster_engine_failures_total');
    expect(failures.map(({ labels, value }) => ({ ...labels, value }))).toEqual([{ ...broken, code: expect.stringMatching(/^[a-z_]+$/), value: 1 }]);
    // Their latency: every bucket of the histogram, the last holding all the page's turns.
    const buckets = samples(after).filter((sample) => sample.name === 'roster_turn_duration_seconds_bucket' && sample.labels.door === 'web' && sample.labels.engine === 'offline');
    expect(buckets.map((bucket) => bucket.labels.le)).toEqual(['0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '20', '30', '60', '120', '+Inf']);
    expect(buckets.at(-1)!.value - valueOf(before, 'roster_turn_duration_seconds_bucket', { door: 'web', engine: 'offline', le: '+Inf' })).toBe(2);
    expect(valueOf(after, 'roster_turn_duration_seconds_count', { door: 'web', engine: 'offline' })).toBe(buckets.at(-1)!.value);
    expect(valueOf(after, 'roster_turn_duration_seconds_sum', { door: 'web', engine: 'offline' })).toBeGreaterThan(0);

    // Read at scrape time: every queue in every state, the outbox per queue, the Telegram account held by this process.
    for (const queue of jobNames) {
      for (const state of ['waiting', 'active', 'delayed', 'failed']) {
        expect(samples(after).some((sample) => sample.name === 'roster_queue_jobs' && sample.labels.queue === queue && sample.labels.state === state), `${queue} ${state}`).toBe(true);
      }
      expect(samples(after).some((sample) => sample.name === 'roster_outbox_pending' && sample.labels.queue === queue), `outbox ${queue}`).toBe(true);
    }
    for (const source of ['queues', 'outbox', 'leases']) expect(valueOf(after, 'roster_metrics_source_up', { source })).toBe(1);
    const accounts = samples(after).filter((sample) => sample.name === 'roster_channel_state');
    expect(accounts.map(({ labels, value }) => ({ ...labels, holder: labels.holder!.replace(/:\d+:[0-9a-f]{8}$/, ':PID:ID'), value }))).toEqual([
      { channel: 'telegram', account: 'default', holder: expect.stringMatching(/:PID:ID$/), state: 'receiving', value: 1 },
    ]);
    // The turns each queued extraction (in its outbox row, then in its queue): the worker of this process relays and runs them.
    await until(
      async () => {
        const text = await scrape();
        return valueOf(text, 'roster_outbox_pending', { queue: 'extract' }) === 0 && valueOf(text, 'roster_queue_jobs', { queue: 'extract', state: 'waiting' }) === 0;
      },
      'the extractions to be relayed and run',
      60_000,
    );

    // No label names a person, holds their words, their ids or a token.
    const people = (await (await fetch(`${address}/api/people`, { headers: { cookie: owner.cookie } })).json()) as { people: Array<{ id: string; name: string }> };
    expect(people.people.map((person) => person.name).sort()).toEqual(['Ada', 'Bob', 'Pia', 'owner']);
    const labelValues = samples(after).flatMap((sample) => Object.values(sample.labels));
    // Ids and secrets anywhere in a label; names and words as a label's words (a holder's random hex may spell "ada").
    const secrets = [...people.people.map((person) => person.id), pia.id, token, telegram.token, '127.0.0.1', String(refusing.port)];
    const names = [...people.people.map((person) => person.name), pia.name, ...words.flatMap((message) => message.split(' ')), 'violin', 'amber', 'quokka', 'lamp', 'teal', 'oboe', 'lilac'].map((word) =>
      word.toLowerCase(),
    );
    for (const value of labelValues) {
      for (const secret of secrets) expect(value.includes(secret), `label ${JSON.stringify(value)} holds ${secret}`).toBe(false);
      for (const word of value.toLowerCase().split(/[^a-z0-9]+/)) expect(names, `label ${JSON.stringify(value)}`).not.toContain(word);
    }
    // A positive control for the scan: the labels do hold the doors and the engine.
    expect(labelValues).toEqual(expect.arrayContaining(['web', 'telegram', 'offline']));

    // METRICS_PORT: the same metrics on loopback, with no sign-in; nothing else there.
    const loopback = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(loopback.status).toBe(200);
    expect(valueOf(await loopback.text(), 'roster_turns_total', web) - webBefore).toBe(2);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/api/people`)).status).toBe(404);
    // A page of another name that resolves here (DNS rebinding) reads nothing.
    const rebound = await new Promise<number>((resolve, reject) =>
      http.get({ host: '127.0.0.1', port: metricsPort, path: '/metrics', headers: { host: `rebound.example:${metricsPort}` } }, (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      }).on('error', reject),
    );
    expect(rebound).toBe(421);
    expect((await fetch(`${address}/metrics`)).status).toBe(401);
  });

  it('each gateway serves its own on METRICS_PORT: the standby says so, and counts the takeover and its turns once the holder stops', { timeout: 300_000 }, async () => {
    const dir = tempDataDir();
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const telegram = await startFakeTelegram();
    cleanups.push(() => telegram.close());
    const env = { ROSTER_DATA_DIR: dir, REDIS_URL: redisUrl, ROSTER_QUEUE_PREFIX: `test-${randomUUID()}`, TELEGRAM_BOT_TOKEN: telegram.token, TELEGRAM_API_ROOT: telegram.apiRoot };
    expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'keeps notes'], env)).code).toBe(0);
    const gateway = async () => {
      const port = await freePort();
      const process = startRoster(['gateway'], { ...env, GATEWAY_PORT: String(await freePort()), METRICS_PORT: String(port) });
      cleanups.push(() => endRoster(process));
      await process.waitForOutput(/gateway is running/);
      return { process, scrape: async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text() };
    };
    const states = (text: string) =>
      samples(text)
        .filter((sample) => sample.name === 'roster_channel_state')
        .map(({ labels }) => ({ holder: labels.holder ?? '', state: labels.state ?? '' }))
        .sort((a, b) => a.state.localeCompare(b.state));
    const takeovers = (text: string) => valueOf(text, 'roster_lease_takeovers_total', { channel: 'telegram', account: 'default' });

    const first = await gateway();
    await until(() => telegram.calls.includes('getUpdates'), 'the first gateway to poll Telegram', 60_000);
    const held = states(await first.scrape());
    expect(held).toEqual([{ holder: expect.stringMatching(/:\d+:[0-9a-f]{8}$/), state: 'receiving' }]);
    const firstHolder = held[0]!.holder!;
    const second = await gateway();
    await until(async () => states(await second.scrape()).some((account) => account.state === 'standby'), 'the second gateway to stand by', 60_000);
    const standing = states(await second.scrape());
    expect(standing).toEqual([
      { holder: firstHolder, state: 'receiving' },
      { holder: expect.not.stringMatching(firstHolder), state: 'standby' },
    ]);
    const secondHolder = standing[1]!.holder!;
    // The first took a new account: no takeover; the second has taken nothing yet.
    expect(takeovers(await first.scrape())).toBe(0);
    expect(takeovers(await second.scrape())).toBe(0);

    // The holder stops: the second takes the account over, and counts it once.
    expect(await first.process.stop()).toBe(0);
    await until(async () => states(await second.scrape()).some((account) => account.state === 'receiving' && account.holder === secondHolder), 'the second gateway to take over', 60_000);
    const after = await second.scrape();
    expect(states(after)).toEqual([{ holder: secondHolder, state: 'receiving' }]);
    expect(takeovers(after)).toBe(1);

    // A stranger's message now reaches the second gateway: its turn is counted there, under its door.
    const before = valueOf(after, 'roster_turns_total', { door: 'telegram', engine: 'none', outcome: 'refused' });
    const calls = telegram.sent().length;
    await telegram.deliver({ chat: 'dm', from: telegram.user(5), text: 'hello there' });
    await until(() => telegram.sent().length > calls, 'the pairing hint', 60_000);
    expect(valueOf(await second.scrape(), 'roster_turns_total', { door: 'telegram', engine: 'none', outcome: 'refused' }) - before).toBe(1);
  });

  it('reads the outbox backlog at scrape time: the rows a turn queued while no worker runs, then none once a worker relays them', { timeout: 300_000 }, async () => {
    const { dir, prefix } = freshInstallation();
    const metricsPort = await freePort();
    const env = { ROSTER_DATA_DIR: dir, REDIS_URL: redisUrl, ROSTER_QUEUE_PREFIX: prefix };
    const server = startRoster(['server'], { ...env, PORT: String(await freePort()), METRICS_PORT: String(metricsPort) });
    cleanups.push(() => endRoster(server));
    const [, address] = await server.waitForOutput(/running at (http:\/\/\S+)/);
    expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'keeps notes'], env)).code).toBe(0);
    const link = (await runRoster(['login-link'], env)).stdout.trim();
    const login = await fetch(`${address}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: new URL(link).hash.slice(1) }) });
    expect(login.status).toBe(200);
    const owner = { cookie: login.headers.get('set-cookie')!.split(';')[0]!, csrfToken: ((await login.json()) as { csrfToken: string }).csrfToken };
    const scrape = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(valueOf(await scrape(), 'roster_outbox_pending', { queue: 'extract' })).toBe(0);

    // A turn without a learning signal queues one extraction, in the outbox; no worker runs to relay it.
    const chat = await fetch(`${address}/api/chat`, {
      method: 'POST',
      headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrfToken, 'content-type': 'application/json' },
      body: JSON.stringify({ agent: 'Scout', message: 'hello Scout, how is the weather' }),
    });
    expect(await chat.text()).toContain('event: done');
    const pending = await scrape();
    expect(valueOf(pending, 'roster_outbox_pending', { queue: 'extract' })).toBe(1);
    expect(samples(pending).filter((sample) => sample.name === 'roster_outbox_pending').reduce((sum, sample) => sum + sample.value, 0)).toBe(1);
    expect(valueOf(pending, 'roster_outbox_oldest_pending_seconds')).toBeGreaterThanOrEqual(0);
    expect(valueOf(pending, 'roster_turns_total', { door: 'web', engine: 'offline', outcome: 'answered' })).toBe(1);

    // A worker starts: it relays the row, and the backlog reads empty.
    const worker = startRoster(['worker'], env);
    cleanups.push(() => endRoster(worker));
    await until(async () => valueOf(await scrape(), 'roster_outbox_pending', { queue: 'extract' }) === 0, 'the worker to relay the outbox', 60_000);
    expect(valueOf(await scrape(), 'roster_outbox_oldest_pending_seconds')).toBe(0);
  });
});
