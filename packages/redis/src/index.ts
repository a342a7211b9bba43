import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { makePrivateFolder, parseRedisUrl, redactUrl, tightenFolder, writePrivateFile, type Logger, type RedisTarget } from '@roster/config';
import { RosterError } from '@roster/errors';
import { Cluster, Redis } from 'ioredis';

/** A Redis that Roster may use, and how to let go of it. */
export interface RedisHandle {
  url: string;
  /** True when Roster started this redis-server itself, in its data folder. */
  private: boolean;
  stop(): Promise<void>;
}

/**
 * Answer PING at `url` within `timeoutMs`, or throw with the reason. On a
 * Redis Cluster every master must answer and the cluster must say its state
 * is ok: a master that is gone takes its slots with it, and a queue whose
 * slot it held stops.
 */
export async function pingRedis(url: string, timeoutMs = 2000): Promise<void> {
  const target = parseRedisUrl(url);
  if (target.kind === 'cluster') return pingCluster(target, timeoutMs);
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.ping();
  } finally {
    client.disconnect();
  }
}

async function pingCluster(target: Extract<RedisTarget, { kind: 'cluster' }>, timeoutMs: number): Promise<void> {
  const cluster = new Cluster(target.nodes, {
    lazyConnect: true,
    enableOfflineQueue: false,
    clusterRetryStrategy: () => null,
    slotsRefreshTimeout: timeoutMs,
    // The masters' own connections are made on their first command: they queue it until then, and fail at once when refused.
    redisOptions: { ...credentials(target), connectTimeout: timeoutMs, maxRetriesPerRequest: 0 },
  });
  cluster.on('error', () => {});
  try {
    await within(cluster.connect(), timeoutMs, 'the cluster did not answer');
    const masters = cluster.nodes('master');
    if (masters.length === 0) throw new Error('the cluster has no master');
    await Promise.all(
      masters.map((node) =>
        within(node.ping(), timeoutMs, 'no answer').catch((error: unknown) => {
          throw new Error(`the cluster node ${node.options.host}:${node.options.port} does not answer: ${(error as Error).message}`);
        }),
      ),
    );
    const info = String(await within(masters[0]!.cluster('INFO'), timeoutMs, 'no answer to CLUSTER INFO'));
    const state = /cluster_state:(\w+)/.exec(info)?.[1];
    if (state !== 'ok') throw new Error(`the cluster's state is ${state ?? 'unknown'}`);
  } finally {
    cluster.disconnect();
  }
}

function credentials(target: RedisTarget): { username?: string; password?: string; tls?: object } {
  return {
    ...(target.username === undefined ? {} : { username: target.username }),
    ...(target.password === undefined ? {} : { password: target.password }),
    ...(target.tls ? { tls: {} } : {}),
  };
}

function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** `ok`, or the reason Redis at `url` does not answer: what /healthz and doctor show. */
export async function redisStatus(url: string): Promise<string> {
  try {
    await pingRedis(url);
    return 'ok';
  } catch (error) {
    return `not reachable (${redactUrl(url)}): ${(error as Error).message}`;
  }
}

/** The path of an executable named `name` on PATH, or undefined. */
export function findExecutable(name: string, searchPath: string = process.env.PATH ?? ''): string | undefined {
  for (const dir of searchPath.split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

export interface EnsureRedisOptions {
  url: string;
  dataDir: string;
  logger: Logger;
  /**
   * Whether an unreachable Redis may be replaced by a private redis-server in
   * the data folder (`roster start`). Production commands pass false: their
   * Redis is shared, and a private one would split the queues.
   */
  allowPrivate: boolean;
  /** Where to look for redis-server; the process PATH by default. */
  searchPath?: string;
}

/** The Redis to use: the configured one if it answers, else a private one, else a clear error. */
export async function ensureRedis(options: EnsureRedisOptions): Promise<RedisHandle> {
  const log = options.logger.child({ component: 'redis' });
  let reason: string;
  try {
    await pingRedis(options.url);
    return { url: options.url, private: false, stop: async () => {} };
  } catch (error) {
    reason = (error as Error).message;
  }
  const shown = redactUrl(options.url);
  if (parseRedisUrl(options.url).kind === 'cluster') {
    // A private redis-server in place of a cluster would split the queues from the other processes that use the cluster.
    throw new RosterError('redis_unreachable', `The Redis Cluster of REDIS_URL is not ready (${shown}: ${reason}): start its nodes, or fix REDIS_URL.`, { retryable: true });
  }
  const executable = options.allowPrivate ? findExecutable('redis-server', options.searchPath) : undefined;
  if (executable === undefined) {
    throw new RosterError(
      'redis_unreachable',
      options.allowPrivate
        ? `REDIS_URL is not reachable (${shown}: ${reason}) and redis-server is not installed: start Redis, set REDIS_URL, or install redis-server (apt-get install redis-server).`
        : `REDIS_URL is not reachable (${shown}: ${reason}): start Redis or set REDIS_URL to one that runs.`,
      { retryable: true },
    );
  }
  log.warn({ configured: shown }, 'configured Redis is not reachable; starting a private redis-server in the data folder');
  return startPrivateRedis({ executable, dataDir: options.dataDir, logger: log });
}

/**
 * Files a redis-server writes when it persists, which may hold job data
 * (texts a person has since had forgotten among them). The private Redis
 * keeps nothing on disk, so any left by an earlier version go.
 */
const persistenceFiles = ['dump.rdb', 'appendonly.aof', 'appendonlydir'];

/**
 * Run redis-server on a free loopback port, with its folder in
 * `<dataDir>/redis`; stopped with the handle.
 *
 * It is the owner's alone: it asks for a password made for this run (a
 * loopback port is open to every account on the machine), which travels only
 * in the URL handed to the queues and in `redis.url` (600) for the owner's
 * other commands, and is never logged. It keeps nothing on disk (no RDB
 * snapshot, no append-only file): queues are rebuilt from the outbox, and job
 * data must not outlive a forget in a file. It runs under umask 077 so that
 * its pid and log files are the owner's only.
 */
export async function startPrivateRedis(options: { executable: string; dataDir: string; logger: Logger }): Promise<RedisHandle> {
  makePrivateFolder(options.dataDir);
  const dir = path.join(options.dataDir, 'redis');
  makePrivateFolder(dir);
  await stopLeftover(path.join(dir, 'redis.pid'), options.logger);
  for (const name of persistenceFiles) fs.rmSync(path.join(dir, name), { recursive: true, force: true });
  tightenFolder(dir);
  const port = await freePort();
  const password = randomBytes(24).toString('base64url');
  // The password goes in on stdin as configuration, never on the command line that `ps` shows every account.
  const arguments_ = ['-', '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'no', '--save', '', '--daemonize', 'no', '--pidfile', path.join(dir, 'redis.pid'), '--logfile', path.join(dir, 'redis.log')];
  const previousUmask = process.umask(0o077);
  let child: ChildProcess;
  try {
    child = spawn(options.executable, arguments_, { stdio: ['pipe', 'ignore', 'ignore'] });
  } finally {
    process.umask(previousUmask);
  }
  child.stdin?.end(`requirepass "${password}"\n`);
  const url = `redis://:${password}@127.0.0.1:${port}`;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await waitForRedis(url, child, 10_000);
  } catch (error) {
    child.kill('SIGKILL');
    throw new RosterError('redis_start_failed', `The private redis-server did not start: ${(error as Error).message}. See ${path.join(dir, 'redis.log')}.`, { cause: error });
  }
  options.logger.info({ redis: redactUrl(url), dir }, 'private redis-server started');
  // Other commands of this installation (roster jobs run) find it here.
  writePrivateFile(path.join(dir, 'redis.url'), url);
  let stopped = false;
  return {
    url,
    private: true,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      fs.rmSync(path.join(dir, 'redis.url'), { force: true });
    },
  };
}

async function waitForRedis(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}`);
    try {
      await pingRedis(url, 500);
      return;
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error(`no answer within ${timeoutMs} ms (${(lastError as Error | undefined)?.message ?? 'no error'})`);
}

/**
 * Stop a private redis-server left by a process that died without stopping
 * it (a kill -9), and wait until it is gone: left running, it would hold its
 * port and, on its way out, delete the pid file of the one started after it.
 */
async function stopLeftover(pidFile: string, logger: Logger): Promise<void> {
  let pid: number;
  try {
    pid = Number.parseInt(fs.readFileSync(pidFile, 'utf8'), 10);
    // Only a redis-server: a recycled pid may belong to anything else by now.
    if (!Number.isInteger(pid) || pid <= 0 || !fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('redis-server')) return;
  } catch {
    return; // none left
  }
  logger.warn({ pid }, 'stopping the private redis-server an earlier run left behind');
  const gone = () => !fs.existsSync(`/proc/${pid}`) || fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') === true;
  try {
    process.kill(pid, 'SIGTERM');
    for (let waited = 0; waited < 5_000 && !gone(); waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
    if (!gone()) process.kill(pid, 'SIGKILL');
    for (let waited = 0; waited < 2_000 && !gone(); waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
  } catch {
    // It ended meanwhile.
  }
  fs.rmSync(pidFile, { force: true });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * The Redis a command should talk to: REDIS_URL when it answers, else the
 * private redis-server that `roster start` runs in the data folder, if any.
 */
export async function locateRedis(url: string, dataDir: string): Promise<string> {
  try {
    await pingRedis(url);
    return url;
  } catch (error) {
    const file = path.join(dataDir, 'redis', 'redis.url');
    if (fs.existsSync(file)) {
      const privateUrl = fs.readFileSync(file, 'utf8').trim();
      try {
        await pingRedis(privateUrl);
        return privateUrl;
      } catch {
        // stale file
      }
    }
    throw new RosterError('redis_unreachable', `REDIS_URL is not reachable (${redactUrl(url)}: ${(error as Error).message}) and no private Redis of roster start runs: start Roster or Redis.`, {
      retryable: true,
    });
  }
}
