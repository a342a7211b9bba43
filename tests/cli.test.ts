import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { loadMigrations } from '@roster/db';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, isRunning, runRoster, startRoster, tempDataDir, type RunningRoster } from './support/roster-process.js';

const latest = loadMigrations().length;
const nothingToDo = `Nothing to do: the database is at version ${latest}.\n`;
const running: RunningRoster[] = [];
const folders: string[] = [];
afterEach(async () => {
  while (running.length > 0) await running.pop()?.stop();
  while (folders.length > 0) fs.rmSync(folders.pop()!, { recursive: true, force: true });
});

function dataDir(options: { migrated?: boolean } = {}): string {
  const dir = tempDataDir(options);
  folders.push(dir);
  return dir;
}

/** Every entry under `folder`, itself included, that an account other than its owner may use: `mode path`. */
function exposedEntries(folder: string): string[] {
  const exposed: string[] = [];
  const visit = (entry: string) => {
    const stat = fs.lstatSync(entry);
    if (!stat.isSymbolicLink() && (stat.mode & 0o077) !== 0) exposed.push(`${(stat.mode & 0o777).toString(8)} ${path.relative(folder, entry) || '.'}`);
    if (stat.isDirectory()) for (const name of fs.readdirSync(entry)) visit(path.join(entry, name));
  };
  visit(folder);
  return exposed;
}

/** Files a redis-server writes when it persists (RDB snapshots, append-only files), anywhere under `folder`. */
function persistenceFiles(folder: string): string[] {
  return (fs.readdirSync(folder, { recursive: true }) as string[]).filter((name) => /(\.rdb|\.aof|appendonlydir)$/.test(name));
}

/** Send raw RESP commands to a Redis and return what it answered once `replies` lines have come. */
function redisExchange(url: string, commands: string, replies: number): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(Number(port), hostname, () => socket.write(commands));
    let answer = '';
    socket.on('data', (chunk) => {
      answer += chunk;
      if (answer.split('\r\n').length > replies) {
        socket.end();
        resolve(answer);
      }
    });
    socket.on('error', reject);
  });
}

function start(args: string[], env: Record<string, string>): RunningRoster {
  const process = startRoster(args, env);
  running.push(process);
  return process;
}

describe('roster start', () => {
  it('serves /healthz with the embedded database, migrated, and stops cleanly on SIGTERM', async () => {
    const dir = dataDir();
    const port = await freePort();
    const roster = start(['start'], { ROSTER_DATA_DIR: dir, PORT: String(port) });
    const [, address] = (await roster.waitForOutput(/running at (http:\/\/\S+)/)) as RegExpMatchArray;

    const response = await fetch(`${address}/healthz`);
    expect(response.status).toBe(200);
    const health = (await response.json()) as { pgvector: string };
    expect(health).toMatchObject({ ok: true, database: 'embedded', redis: 'ok' });
    expect(health.pgvector).toMatch(/^0\.([89]|\d\d)\./);
    // The page: its shell, and the script the shell names.
    const page = await fetch(`${address}/`);
    expect(page.headers.get('content-type')).toContain('text/html');
    const shell = await page.text();
    expect(shell).toContain('<title>Roster</title>');
    const script = /<script type="module" crossorigin src="(\/assets\/[^"]+\.js)"/.exec(shell)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${address}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toContain('javascript');
    const missing = await fetch(`${address}/no-such-page`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: { code: 'not_found', message: 'No route for GET /no-such-page.' } });

    // A second command shares the running process's embedded database through its socket.
    const second = await runRoster(['migrate'], { ROSTER_DATA_DIR: dir });
    expect(second).toMatchObject({ code: 0, stdout: nothingToDo });
    // Bull Board is the owner's: refused without a session, shown with the one the first start's login link opens.
    expect((await fetch(`${address}/admin/queues/api/queues`)).status).toBe(401);
    const [, token] = (await roster.waitForOutput(/Made the first owner, "owner"\. .*: http:\/\/\S+\/login#(\S+)/)) as RegExpMatchArray;
    const login = await fetch(`${address}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
    expect(login.status).toBe(200);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const queues = await fetch(`${address}/admin/queues/api/queues`, { headers: { cookie } });
    expect(queues.status).toBe(200);
    expect(((await queues.json()) as { queues: Array<{ name: string }> }).queues.map((queue) => queue.name).sort()).toEqual(
      ['backup', 'embed', 'episodes', 'erase', 'extract', 'fade', 'harvest', 'mirror', 'review', 'vacuum'],
    );

    expect(await roster.stop()).toBe(0);
    const after = await runRoster(['migrate'], { ROSTER_DATA_DIR: dir });
    expect(after).toMatchObject({ code: 0, stdout: nothingToDo });
  });

  it('starts a private redis-server in the data folder when REDIS_URL does not answer, and stops it on exit', async () => {
    const dir = dataDir();
    // A leftover of an earlier version that persisted: job data on disk that must not outlive the run.
    fs.mkdirSync(path.join(dir, 'redis', 'appendonlydir'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'redis', 'dump.rdb'), 'REDIS0011');
    fs.writeFileSync(path.join(dir, 'redis', 'appendonlydir', 'appendonly.aof.1.incr.aof'), '*1\r\n$4\r\nPING\r\n');
    expect(persistenceFiles(dir).sort()).toEqual(['redis/appendonlydir', 'redis/appendonlydir/appendonly.aof.1.incr.aof', 'redis/dump.rdb']);
    const port = await freePort();
    const deadRedis = `redis://127.0.0.1:${await freePort()}`;
    const roster = start(['start'], { ROSTER_DATA_DIR: dir, PORT: String(port), REDIS_URL: deadRedis });
    const [, address] = (await roster.waitForOutput(/running at (http:\/\/\S+)/)) as RegExpMatchArray;
    expect(roster.output().stdout).toContain('private Redis');

    const health = await (await fetch(`${address}/healthz`)).json();
    expect(health).toMatchObject({ ok: true, redis: 'ok' });
    const pid = Number(fs.readFileSync(path.join(dir, 'redis', 'redis.pid'), 'utf8'));
    expect(isRunning(pid)).toBe(true);

    // It asks for a password: refused without it, answered with it.
    const url = fs.readFileSync(path.join(dir, 'redis', 'redis.url'), 'utf8').trim();
    const password = decodeURIComponent(new URL(url).password);
    expect(password.length).toBeGreaterThanOrEqual(24);
    expect(await redisExchange(url, 'PING\r\n', 1)).toMatch(/^-NOAUTH /);
    expect(await redisExchange(url, `AUTH ${password}\r\nPING\r\n`, 2)).toBe('+OK\r\n+PONG\r\n');
    expect(await redisExchange(url, `AUTH wrong-${password}\r\nPING\r\n`, 2)).toMatch(/^-WRONGPASS .*\r\n-NOAUTH /);
    // Not on the command line every account can read, nor in anything Roster printed.
    const commandLine = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    expect(commandLine).toContain('redis-server');
    expect(commandLine).not.toContain(password);

    // A run with jobs: the worker of roster start takes one queued by another command.
    const job = await runRoster(['jobs', 'run', 'fade', '--wait', '--timeout', '60'], { ROSTER_DATA_DIR: dir, REDIS_URL: deadRedis });
    expect(job).toMatchObject({ code: 0 });
    expect(job.stdout).toMatch(/^fade done: /);

    expect(await roster.stop()).toBe(0);
    await expect.poll(() => isRunning(pid), { timeout: 5000 }).toBe(false);
    const printed = `${roster.output().stdout}${roster.output().stderr}${job.stdout}${job.stderr}`;
    expect(printed).toContain('private Redis');
    expect(printed).not.toContain(password);
    // Nothing kept on disk, the leftovers included, and the folder is its owner's alone.
    expect(persistenceFiles(dir)).toEqual([]);
    const left = fs.readdirSync(path.join(dir, 'redis'));
    expect(left).toContain('redis.log');
    expect(left.filter((name) => name !== 'redis.log' && name !== 'redis.pid')).toEqual([]);
    expect(exposedEntries(dir)).toEqual([]);
  });

  it('exits 1 with one clear line when Redis does not answer and redis-server is not installed', async () => {
    const dir = dataDir();
    // A PATH that holds node but no redis-server.
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-path-'));
    folders.push(bin);
    fs.symlinkSync(process.execPath, path.join(bin, 'node'));
    const result = await runRoster(['start'], {
      ROSTER_DATA_DIR: dir,
      PORT: String(await freePort()),
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
      PATH: bin,
    });
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split('\n').filter((line) => !line.startsWith('{'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/REDIS_URL is not reachable .*install redis-server/);
  });

  it('refuses to start a production process on an unreachable Redis instead of starting a private one', async () => {
    const result = await runRoster(['worker'], { ROSTER_DATA_DIR: dataDir(), REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/REDIS_URL is not reachable .*start Redis or set REDIS_URL/);
  });
});

describe('roster migrate, doctor and db serve', () => {
  it('keeps the data folder its owner\'s: folders 700, files 600, whatever the umask and the folder\'s earlier mode', async () => {
    const parent = dataDir();
    const dir = path.join(parent, 'data');
    fs.mkdirSync(dir);
    fs.chmodSync(dir, 0o755);
    // A control beside it: the check reads real modes, and sees a readable file as such.
    const control = path.join(parent, 'control.txt');
    fs.writeFileSync(control, 'not Roster\'s');
    fs.chmodSync(control, 0o644);
    expect(exposedEntries(dir)).toEqual(['755 .']);

    const result = await runRoster(['migrate'], { ROSTER_DATA_DIR: dir });
    expect(result.code).toBe(0);
    expect(fs.readdirSync(dir)).toContain('pglite');
    expect(fs.readdirSync(path.join(dir, 'pglite')).length).toBeGreaterThan(10);
    expect(exposedEntries(dir)).toEqual([]);
    expect(exposedEntries(parent)).toEqual(['644 control.txt']);

    // A folder Roster creates itself is private from the start.
    const fresh = path.join(parent, 'fresh', 'data');
    expect((await runRoster(['migrate'], { ROSTER_DATA_DIR: fresh })).code).toBe(0);
    expect(exposedEntries(fresh)).toEqual([]);
  });

  it('migrates once, then reports nothing to do', async () => {
    const dir = dataDir({ migrated: false });
    const first = await runRoster(['migrate'], { ROSTER_DATA_DIR: dir });
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^Applied 0001_foundation\n/);
    const second = await runRoster(['migrate', '--json'], { ROSTER_DATA_DIR: dir });
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toEqual({ applied: [], version: latest });
  });

  it('doctor prints one line per part and exits 0 when all is well', async () => {
    const dir = dataDir();
    await runRoster(['migrate'], { ROSTER_DATA_DIR: dir });
    const result = await runRoster(['doctor'], { ROSTER_DATA_DIR: dir });
    expect(result.code).toBe(0);
    const names = result.stdout.trim().split('\n').map((line) => line.split(/\s+/)[0]);
    // Then every registered channel, in the registry's order.
    expect(names).toEqual(['database', 'pgvector', 'migrations', 'roles', 'writes', 'key', 'redis', 'engine', 'judge', 'embedder', 'discord', 'matrix', 'slack', 'telegram', 'whatsapp']);
    // The offline engine cannot judge the mirror's replays: said once, here, as a part that is off.
    expect(result.stdout).toMatch(/^judge\s+off\s+no judge configured: .*set ROSTER_JUDGE_ENGINE/m);
    expect(result.stdout).toMatch(/^database\s+ok\s+embedded \(PGlite\) Postgres 18/m);
    // The embedded database runs as roster_owner, not its superuser.
    expect(result.stdout).toMatch(/^roles\s+ok\s+owner roster_owner; roster_app and roster_ops$/m);
    expect(result.stdout).toMatch(/^pgvector\s+ok\s+0\.8/m);
  });

  it('doctor says what is wrong and exits 1', async () => {
    const dir = dataDir({ migrated: false });
    const result = await runRoster(['doctor', '--json'], {
      ROSTER_DATA_DIR: dir,
      ROSTER_ENGINE: 'openai:gpt-4o-mini',
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
    });
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout) as { ok: boolean; checks: Array<{ name: string; status: string; detail: string }> };
    const byName = Object.fromEntries(report.checks.map((check) => [check.name, check]));
    expect(report.ok).toBe(false);
    expect(byName.migrations).toMatchObject({ status: 'fail', detail: expect.stringMatching(/run roster migrate/) });
    expect(byName.engine).toMatchObject({ status: 'fail', detail: 'openai:gpt-4o-mini needs OPENAI_API_KEY' });
    expect(byName.redis).toMatchObject({ status: 'fail' });
    expect(byName.embedder).toMatchObject({ status: 'ok' });
    // With a language model as the default engine, each agent's own engine judges its replays.
    expect(byName.judge).toMatchObject({ status: 'ok', detail: "each agent's own engine (ROSTER_JUDGE_ENGINE unset)" });
  });

  it('doctor under PRIVACY=strict refuses an Ollama embedder off this machine and accepts one on loopback', async () => {
    const dir = dataDir();
    await runRoster(['migrate'], { ROSTER_DATA_DIR: dir });
    const ollama = http.createServer((request, response) => {
      response.writeHead(request.url === '/api/tags' ? 200 : 404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ models: [{ name: 'nomic-embed-text:latest' }] }));
    });
    await new Promise<void>((resolve) => ollama.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = ollama.address() as AddressInfo;
      const embedderCheck = async (ollamaUrl: string) => {
        const result = await runRoster(['doctor', '--json'], {
          ROSTER_DATA_DIR: dir,
          PRIVACY: 'strict',
          ROSTER_EMBEDDER: 'ollama:nomic-embed-text',
          OLLAMA_URL: ollamaUrl,
        });
        const report = JSON.parse(result.stdout) as { checks: Array<{ name: string; status: string; detail: string }> };
        return report.checks.find((check) => check.name === 'embedder');
      };
      expect(await embedderCheck(`http://127.0.0.1:${port}`)).toEqual({
        name: 'embedder',
        status: 'ok',
        detail: 'ollama:nomic-embed-text (answered 200)',
      });
      expect(await embedderCheck('http://10.0.0.5:11434')).toEqual({
        name: 'embedder',
        status: 'fail',
        detail: 'ollama:nomic-embed-text sends memory off this machine, which PRIVACY=strict forbids: use a local one',
      });
    } finally {
      await new Promise<void>((resolve) => ollama.close(() => resolve()));
    }
  });

  it('db serve exposes the embedded database, behind a password of its own run, to a Postgres client and to a second Roster process', async () => {
    const dir = dataDir();
    const port = await freePort();
    const served = start(['db', 'serve', '--port', String(port)], { ROSTER_DATA_DIR: dir });
    const [connectionString, password] = (await served.waitForOutput(/postgres:\/\/roster:([A-Za-z0-9_-]{24})@\S+/)) as RegExpMatchArray;
    expect(connectionString).toBe(`postgres://roster:${password}@127.0.0.1:${port}/postgres?sslmode=disable`);

    const client = new pg.Client({ connectionString });
    await client.connect();
    const { rows } = await client.query<{ extversion: string }>(`select extversion from pg_extension where extname = 'vector'`);
    await client.end();
    expect(rows[0]?.extversion).toMatch(/^0\.8/);

    const refusal = async (url: string) => {
      const stranger = new pg.Client({ connectionString: url });
      stranger.on('error', () => {});
      return stranger.connect().then(
        async () => {
          await stranger.end();
          return 'connected';
        },
        (error: { code?: string }) => error.code,
      );
    };
    expect(await refusal(connectionString.replace(`:${password}@`, ':not-the-password@'))).toBe('28P01');
    expect(await refusal(connectionString.replace(`roster:${password}@`, 'roster@'))).toBe('28P01');
    expect(await refusal(connectionString.replace('//roster:', '//postgres:'))).toBe('28P01');
    expect(await refusal(connectionString)).toBe('connected');

    const migrate = await runRoster(['migrate'], { DATABASE_URL: connectionString });
    expect(migrate).toMatchObject({ code: 0, stdout: nothingToDo });
    const doctor = await runRoster(['doctor'], { DATABASE_URL: connectionString });
    expect(doctor.stdout).toMatch(/^database\s+ok\s+server Postgres 18/m);
    expect(served.output().stderr).toContain(`postgres://roster:***@127.0.0.1:${port}/`);
    expect(served.output().stderr).not.toContain(password);
    expect(await served.stop()).toBe(0);

    // A new run, a new password: the old one no longer opens it.
    const again = start(['db', 'serve', '--port', String(port)], { ROSTER_DATA_DIR: dir });
    const [secondString, secondPassword] = (await again.waitForOutput(/postgres:\/\/roster:([A-Za-z0-9_-]{24})@\S+/)) as RegExpMatchArray;
    expect(secondPassword).not.toBe(password);
    expect(await refusal(connectionString)).toBe('28P01');
    expect(await refusal(secondString)).toBe('connected');
    expect(await again.stop()).toBe(0);
    expect(exposedEntries(dir)).toEqual([]);
  });

  it('refuses a server Postgres without pgvector, saying what to install', async () => {
    const url = process.env.PLAIN_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
    const result = await runRoster(['migrate'], { DATABASE_URL: url });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/has no pgvector extension\. Install pgvector 0\.8\.0 or newer/);
  });
});

describe('usage', () => {
  it('answers --help on every command with exit 0', async () => {
    for (const command of [[], ['start'], ['server'], ['worker'], ['gateway'], ['migrate'], ['db', 'serve'], ['audit', 'verify'], ['doctor']]) {
      const result = await runRoster([...command, '--help'], {});
      expect(result.code, command.join(' ')).toBe(0);
      expect(result.stdout).toMatch(/Usage: roster/);
    }
  });

  it('exits 2 on an unknown command or option, and 1 on an invalid configuration', async () => {
    const unknown = await runRoster(['fly'], {});
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command "fly"/);
    const option = await runRoster(['migrate', '--fast'], {});
    expect(option.code).toBe(2);
    // Two full sentences.
    expect(option.stderr.trim()).toBe("roster migrate: Unknown option '--fast'. `roster migrate --help` shows the usage.");
    const misspelt = await runRoster(['agent', 'add', '--nmae', 'Zoe'], {});
    expect(misspelt.code).toBe(2);
    expect(misspelt.stderr.trim()).toBe("roster agent add: Unknown option '--nmae'. `roster agent add --help` shows the usage.");
    const port = await runRoster(['db', 'serve', '--port', 'x'], {});
    expect(port.code).toBe(2);
    expect(port.stderr).toMatch(/--port takes a whole number/);
    const config = await runRoster(['migrate'], { PORT: 'eighty' });
    expect(config.code).toBe(1);
    expect(config.stderr).toMatch(/PORT: the value "eighty" is not valid/);
  });
});
