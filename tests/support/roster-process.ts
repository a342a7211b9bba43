import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { clusterTemplateDir } from '@roster/db/testing';

/** The `roster` command as a user runs it: the bin file of apps/cli. */
export const rosterBin = fileURLToPath(new URL('../../apps/cli/bin/roster.js', import.meta.url));

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** An environment without any Roster variable of the machine, plus `extra`. */
export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of ['PATH', 'HOME', 'LANG', 'TMPDIR']) if (process.env[name] !== undefined) env[name] = process.env[name];
  return { ...env, LOG_LEVEL: 'warn', ...extra };
}

/**
 * A data folder of its own for one test. Its embedded database starts as a
 * copy of a cluster that Roster's own first start made once for the run
 * (`makeClusterTemplate`), migrated unless `migrated: false`: initdb and the
 * migrations are most of a first start's cost. `fresh` leaves the folder
 * empty, as on a new machine.
 */
export function tempDataDir(options: { fresh?: boolean; migrated?: boolean } = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-data-'));
  const template = clusterTemplateDir({ migrated: options.migrated !== false });
  if (options.fresh !== true && fs.existsSync(template)) fs.cpSync(template, path.join(dir, 'pglite'), { recursive: true, preserveTimestamps: true });
  return dir;
}

/** Run one roster command to its end; `input` is written to its standard input. */
export function runRoster(args: string[], env: Record<string, string>, timeoutMs = 60_000, input?: string): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [rosterBin, ...args], { env: cleanEnv(env), stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    if (input !== undefined) child.stdin!.end(input);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk) => (stdout += chunk));
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`roster ${args.join(' ')} did not finish in ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A long-running roster command (start, db serve…) and what it printed so far. */
export interface RunningRoster {
  child: ChildProcess;
  output(): { stdout: string; stderr: string };
  /** Wait until stdout matches, or fail with what was printed. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Send SIGTERM and wait for the exit code. */
  stop(): Promise<number | null>;
}

/** `input: true` gives the command a standard input to write to (`child.stdin`), as a person at a terminal would. */
export function startRoster(args: string[], env: Record<string, string>, options: { input?: boolean } = {}): RunningRoster {
  const child = spawn(process.execPath, [rosterBin, ...args], { env: cleanEnv(env), stdio: [options.input === true ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => (stdout += chunk));
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => ({ stdout, stderr }),
    async waitForOutput(pattern, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const match = stdout.match(pattern);
        if (match !== null) return match;
        if (child.exitCode !== null) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(`roster ${args.join(' ')} never printed ${pattern} (exit ${child.exitCode})\nstdout: ${stdout}\nstderr: ${stderr}`);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/**
 * End a long-running command if it still runs, as a test's cleanup: SIGTERM,
 * then SIGKILL when it has not ended within 10 s.
 */
export async function endRoster(roster: RunningRoster): Promise<void> {
  if (roster.child.exitCode !== null || roster.child.signalCode !== null) return;
  const timer = setTimeout(() => roster.child.kill('SIGKILL'), 10_000);
  try {
    await roster.stop();
  } finally {
    clearTimeout(timer);
  }
}

/** A loopback port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

/** Whether a process id is still running. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** `roster start` on a free loopback port, once it says where it runs. */
export async function startListening(env: Record<string, string>): Promise<{ roster: RunningRoster; address: string }> {
  const roster = startRoster(['start'], { ...env, PORT: String(await freePort()) });
  try {
    const [, address] = await roster.waitForOutput(/running at (http:\/\/\S+)/);
    return { roster, address: address! };
  } catch (error) {
    roster.child.kill('SIGKILL');
    throw error;
  }
}

/** Sign the first owner in to the server at `address` with a link from `roster login-link`: the session's cookie and CSRF token. */
export async function signInThrough(address: string, env: Record<string, string>): Promise<{ cookie: string; csrfToken: string }> {
  const link = (await runRoster(['login-link'], env)).stdout.trim();
  const login = await fetch(`${address}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: new URL(link).hash.slice(1) }) });
  if (login.status !== 200) throw new Error(`signing in failed: ${login.status} ${await login.text()}`);
  return { cookie: login.headers.get('set-cookie')!.split(';')[0]!, csrfToken: ((await login.json()) as { csrfToken: string }).csrfToken };
}
