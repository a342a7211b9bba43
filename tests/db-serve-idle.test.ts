import fs from 'node:fs';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { endRoster, freePort, runRoster, startRoster, tempDataDir } from './support/roster-process.js';

/**
 * A `roster db serve` client that opens a transaction and goes idle would
 * hold the embedded database's one session, which every Roster process on
 * the folder shares. After the idle-in-transaction timeout (2 s here; 30 s
 * by default) the gate rolls that transaction back and closes the client
 * with Postgres's own error (SQLSTATE 25P03); the next client and every
 * other command find the session free and nothing of that transaction.
 */

const cleanups: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

describe('roster db serve, a client idle in a transaction', () => {
  it('is rolled back and closed with 25P03 after the timeout; what it committed before stays, and the next client gets in', { timeout: 180_000 }, async () => {
    const dir = tempDataDir();
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const port = await freePort();
    const serve = startRoster(['db', 'serve', '--port', String(port), '--idle-in-transaction-timeout', '2'], { ROSTER_DATA_DIR: dir });
    cleanups.push(() => endRoster(serve));
    const [connectionString] = (await serve.waitForOutput(/postgres:\/\/roster:[A-Za-z0-9_-]{24}@\S+/)) as RegExpMatchArray;

    const idler = new pg.Client({ connectionString });
    // The gate's error arrives with no query running: pg hands it to 'error', then the connection ends.
    const errors: pg.DatabaseError[] = [];
    let told: (error: pg.DatabaseError) => void = () => undefined;
    const closed = new Promise<pg.DatabaseError>((resolve) => (told = resolve));
    // The gate's error first; pg then reports the connection ending as an error of its own.
    idler.on('error', (error) => {
      errors.push(error as pg.DatabaseError);
      told(errors[0]!);
    });
    const ended = new Promise<void>((resolve) => idler.once('end', () => resolve()));
    await idler.connect();
    await idler.query('create table idle_probe (n int)');
    // Control: what the client commits, with and without a transaction, is kept.
    await idler.query('insert into idle_probe values (1)');
    await idler.query('begin');
    await idler.query('insert into idle_probe values (2)');
    await idler.query('commit');
    // Then a transaction left open: the client says nothing more.
    await idler.query('begin');
    await idler.query('insert into idle_probe values (3)');
    const error = await closed;
    await ended;
    expect({ code: error.code, severity: error.severity }).toEqual({ code: '25P03', severity: 'FATAL' });
    expect(error.message).toMatch(/^terminating connection due to idle-in-transaction timeout \(2 s, roster db serve --idle-in-transaction-timeout\): its transaction was rolled back$/);

    // The session is free and clean: the next client gets in at once, outside any transaction, and finds the open transaction's row gone.
    const next = new pg.Client({ connectionString });
    await next.connect();
    cleanups.push(() => next.end());
    expect((await next.query('select n from idle_probe order by n')).rows).toEqual([{ n: 1 }, { n: 2 }]);
    expect((await next.query(`select txid_current_if_assigned() as txid`)).rows).toEqual([{ txid: null }]);
    await next.end();
    // And so does every other Roster command on the folder.
    const listed = await runRoster(['agent', 'list'], { ROSTER_DATA_DIR: dir });
    expect(listed.code, listed.stderr).toBe(0);
  });

  it('refuses a timeout that is not a whole number of seconds, and starts nothing', async () => {
    const dir = tempDataDir();
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const wrong = await runRoster(['db', 'serve', '--port', String(await freePort()), '--idle-in-transaction-timeout', '2.5'], { ROSTER_DATA_DIR: dir });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('--idle-in-transaction-timeout takes a whole number from 0 to 86400, got "2.5".');
    expect(wrong.stdout).toBe('');
  });
});
