import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { until } from '@roster/channels/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { linkThrough, startFakeWhatsApp, fakeBot } from '@roster/channel-whatsapp/testing';
import { testInstallationKey } from '@roster/config/testing';
import { openTestDatabase } from '@roster/db/testing';
import { createLinkedDeviceStore } from '@roster/gateway';
import { cleanEnv, endRoster, runRoster, tempDataDir, type RunningRoster } from './support/roster-process.js';
import { registeredSockets, startRegistry } from './support/whatsapp-registry.js';

/**
 * One WhatsApp socket per linked number. WhatsApp lets one connection serve
 * a linked device (a second one gets both logged out), so of two gateway
 * processes on one database only the lease holder opens the number's
 * socket; the other opens it when the holder is gone. Each process runs the
 * gateway as `roster gateway` does (tests/support/whatsapp-gateway.ts) with
 * the WhatsApp stand-in as its far side, and every socket it opens is a
 * connection to the registry here: the sockets of every process, seen at
 * one place, as WhatsApp's servers see a number's connections.
 */

const script = fileURLToPath(new URL('./support/whatsapp-gateway.ts', import.meta.url));
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** A gateway process serving WhatsApp, once it says it runs. */
async function gateway(env: Record<string, string>): Promise<RunningRoster> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const running: RunningRoster = {
    child,
    output: () => ({ stdout, stderr }),
    async waitForOutput(pattern, timeoutMs = 120_000) {
      await until(() => pattern.test(stdout) || child.exitCode !== null, `${pattern}`, timeoutMs);
      const match = stdout.match(pattern);
      if (match === null) throw new Error(`the gateway ended (${child.exitCode}) before ${pattern}\n${stderr}`);
      return match;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
  cleanups.push(() => endRoster(running));
  await running.waitForOutput(/gateway is running/);
  return running;
}

/** Whether this gateway's log says it receives the WhatsApp number now. */
function receiving(gateway: RunningRoster): boolean {
  const log = gateway.output().stderr;
  const took = Math.max(log.lastIndexOf('serving the bot account'), log.lastIndexOf('took over the bot account'));
  return took > log.lastIndexOf('lost the bot account') && gateway.child.exitCode === null && gateway.child.signalCode === null;
}

describe('two gateways, one linked WhatsApp number', () => {
  it('exactly one socket is open, the lease holder’s; when the holder is killed, the other opens it', { timeout: 300_000 }, async () => {
    const dir = tempDataDir();
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
    const registry = await startRegistry();
    cleanups.push(() => registry.close());
    const env = { ROSTER_DATA_DIR: dir, ROSTER_QUEUE_PREFIX: `test-${randomUUID()}`, WHATSAPP_ENABLED: 'true', WHATSAPP_REGISTRY: String(registry.port), LOG_LEVEL: 'info' };
    const added = await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env);
    expect(added.code, added.stderr).toBe(0);

    const first = await gateway(env);
    // Positive control: the holder opens the number's socket (the registry sees it).
    await until(() => receiving(first) && registry.open() === 1, 'the first gateway to open the socket', 120_000);
    const second = await gateway(env);
    await until(() => /another gateway holds this bot account: standing by/.test(second.output().stderr), 'the second gateway to stand by', 120_000);
    // The standby opened none: one socket for the number, ever, so far.
    expect(receiving(second)).toBe(false);
    expect([registry.open(), registry.opened(), registry.most()]).toEqual([1, 1, 1]);

    // The holder is killed outright: its socket goes with it; the other takes the lease when it lapses and opens its own.
    const killedAt = Date.now();
    first.child.kill('SIGKILL');
    await until(() => registry.open() === 0, 'the killed gateway’s socket to close', 60_000);
    await until(() => receiving(second) && registry.open() === 1, 'the other gateway to open the socket', 120_000);
    const tookOverMs = Date.now() - killedAt;
    expect([registry.open(), registry.opened(), registry.most()]).toEqual([1, 2, 1]);
    console.info(`WhatsApp number taken over ${(tookOverMs / 1000).toFixed(1)} s after kill -9 of its gateway`);
  });

  it('control: two sockets for the number, opened without a lease, are both seen open at once', { timeout: 120_000 }, async () => {
    const registry = await startRegistry();
    cleanups.push(() => registry.close());
    const test = await openTestDatabase();
    cleanups.push(() => test.cleanup());
    const store = createLinkedDeviceStore(test.database, 'whatsapp', 'default');
    const fake = await startFakeWhatsApp({ store, key: testInstallationKey });
    cleanups.push(() => fake.close());
    await linkThrough(fake, { store, key: testInstallationKey });
    const socketFactory = registeredSockets(fake.socketFactory, registry.port, fakeBot.number);
    const adapters = [fake.makeAdapter({ socketFactory }), fake.makeAdapter({ socketFactory })];
    const abort = new AbortController();
    cleanups.push(async () => {
      abort.abort();
      await Promise.allSettled(adapters.map((adapter) => adapter.stop()));
    });
    for (const adapter of adapters) await adapter.start({ signal: abort.signal, onMessage: () => {}, onApprovalPress: async () => ({ text: '', decided: false }) });
    await until(() => registry.open() === 2, 'both sockets to be seen open', 60_000);
    expect(registry.most()).toBe(2);
  });
});
