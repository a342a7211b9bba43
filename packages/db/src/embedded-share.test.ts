import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireDataDirLock } from './data-dir-lock.js';
import { sharedSocketPool } from './embedded-share.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** A folder of its own, removed once its host has left. */
function folder(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-share-'));
  cleanups.push(async () => {
    const deadline = Date.now() + 30_000;
    while (fs.existsSync(path.join(dir, 'roster.lock')) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

async function selectOne(pool: pg.Pool): Promise<unknown> {
  const client = await pool.connect();
  try {
    return (await client.query('select 1 as one')).rows;
  } finally {
    client.release();
  }
}

describe('sharing an embedded database folder', () => {
  it('waits a bounded time for a folder another process holds without serving it, says so in one line, and connects once it is free', async () => {
    const dir = folder();
    // This process holds the folder and serves nothing, as a process that does not share it would.
    const release = acquireDataDirLock(dir);
    const pool = sharedSocketPool(dir, { max: 1, waitMs: 1_000 });
    cleanups.push(() => pool.end());

    const refusal = await pool.connect().then(
      (client) => {
        client.release();
        return undefined;
      },
      (error: Error & { code?: string }) => error,
    );
    expect(refusal).toMatchObject({ code: 'database_busy' });
    expect(refusal!.message).toBe(
      `The embedded database in ${dir} did not answer within 1 s: process ${process.pid} holds it. Wait for that process to finish (or stop it), then run this again.`,
    );

    // Free: the same pool starts a host of the folder and is served by it.
    await release();
    expect(await selectOne(pool)).toEqual([{ one: 1 }]);
  }, 60_000);

  it('takes over a folder whose lock names a process that no longer runs', async () => {
    const dir = folder();
    const gone = spawnSync(process.execPath, ['-e', '']).pid!;
    fs.writeFileSync(path.join(dir, 'roster.lock'), String(gone), { mode: 0o600 });
    const pool = sharedSocketPool(dir, { max: 1, waitMs: 30_000 });
    cleanups.push(() => pool.end());
    expect(await selectOne(pool)).toEqual([{ one: 1 }]);
    // The lock is the host's now.
    expect(Number(fs.readFileSync(path.join(dir, 'roster.lock'), 'utf8'))).not.toBe(gone);
  }, 60_000);
  it('waits for the command that started it: one slow to connect after ready (a busy machine) is served by that host, not told it left', async () => {
    const dir = folder();
    // Started as a command starts it, and told nothing more until well past the idle grace (2 s).
    const host = spawn(process.execPath, [fileURLToPath(new URL('../dist/embedded-host.js', import.meta.url)), dir], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    cleanups.push(() => void host.kill());
    const said = await new Promise<unknown>((resolve) => host.once('message', resolve));
    expect(said).toEqual({ kind: 'ready' });
    host.disconnect();
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(host.exitCode).toBeNull();
    const pool = sharedSocketPool(dir, { max: 1, waitMs: 30_000 });
    cleanups.push(() => pool.end());
    expect(await selectOne(pool)).toEqual([{ one: 1 }]);
    // Served by that host, which still holds the folder: no other was started.
    expect(Number(fs.readFileSync(path.join(dir, 'roster.lock'), 'utf8'))).toBe(host.pid);
  }, 60_000);
});
