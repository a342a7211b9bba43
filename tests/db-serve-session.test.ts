import fs from 'node:fs';
import net from 'node:net';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { endRoster, freePort, runRoster, startListening, startRoster, tempDataDir, type RunningRoster } from './support/roster-process.js';

const cleanups: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

function dataDir(): string {
  const dir = tempDataDir();
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function running(roster: RunningRoster): RunningRoster {
  cleanups.push(() => endRoster(roster));
  return roster;
}

/** A psql-like client on the connection string `roster db serve` printed. */
async function served(dir: string): Promise<{ client: pg.Client; connectionString: string }> {
  const port = await freePort();
  const serve = running(startRoster(['db', 'serve', '--port', String(port)], { ROSTER_DATA_DIR: dir }));
  const [connectionString] = (await serve.waitForOutput(/postgres:\/\/roster:[A-Za-z0-9_-]{24}@\S+/)) as RegExpMatchArray;
  const client = new pg.Client({ connectionString });
  await client.connect();
  let ended = false;
  client.once('end', () => (ended = true));
  cleanups.push(() => (ended ? undefined : client.end()));
  return { client, connectionString: connectionString! };
}

/** What the client sees for a statement: its rows, or the error's SQLSTATE, message and hint. */
async function outcome(client: pg.Client, text: string, values?: unknown[], name?: string): Promise<unknown> {
  return client.query({ text, values, name }).then(
    (result) => ({ rows: result.rows }),
    (error: pg.DatabaseError) => ({ code: error.code, message: error.message, hint: error.hint }),
  );
}

/** The session as every process sees it: role, read-only default, prepared statements, temporary tables, LISTEN channels. */
const sessionState = `select current_user as role, session_user as session, current_setting('default_transaction_read_only') as read_only,
  (select count(*)::int from pg_prepared_statements) as prepared, (select count(*)::int from pg_class where relpersistence = 't') as temp_tables,
  (select count(*)::int from pg_listening_channels()) as listening`;

/** A wire-protocol message: type, int32 length, body. */
function wire(type: string, ...parts: Array<Buffer | string | number[]>): Buffer {
  const body = Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(`${part}\0`) : Buffer.from(part))));
  const header = Buffer.alloc(5);
  header.write(type, 0, 'latin1');
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

const int16 = (value: number) => [(value >> 8) & 0xff, value & 0xff];
const int32 = (value: number) => [(value >>> 24) & 0xff, (value >> 16) & 0xff, (value >> 8) & 0xff, value & 0xff];

/**
 * A client that speaks the protocol itself, as drivers that pipeline do:
 * `exchange` sends messages and returns what came back up to ReadyForQuery,
 * as types, with each error's message and each row's first column.
 */
async function rawClient(connectionString: string): Promise<{ exchange(...messages: Buffer[]): Promise<string[]>; end(): void }> {
  const url = new URL(connectionString);
  const socket = net.createConnection(Number(url.port), url.hostname);
  let buffered = Buffer.alloc(0);
  let waiting: ((messages: string[]) => void) | undefined;
  let seen: string[] = [];
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 5 && buffered.length >= buffered.readInt32BE(1) + 1) {
      const length = buffered.readInt32BE(1);
      const type = String.fromCharCode(buffered[0]!);
      const body = buffered.subarray(5, length + 1);
      buffered = buffered.subarray(length + 1);
      if (type === 'R' && body.readInt32BE(0) === 3) {
        socket.write(wire('p', decodeURIComponent(url.password)));
        continue;
      }
      if (type === 'E') seen.push(`E ${/M([^\0]*)/.exec(body.toString())?.[1] ?? ''}`);
      else if (type === 'D') seen.push(`D ${body.subarray(6, 6 + body.readInt32BE(2)).toString()}`);
      else if (!['S', 'K', 'R'].includes(type)) seen.push(type);
      if (type === 'Z') {
        const done = seen;
        seen = [];
        waiting?.(done);
      }
    }
  });
  const exchange = (...messages: Buffer[]) =>
    new Promise<string[]>((resolve) => {
      waiting = resolve;
      for (const message of messages) socket.write(message);
    });
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const startup = Buffer.concat([Buffer.from(int32(196_608)), Buffer.from('user\0roster\0database\0postgres\0\0')]);
  await exchange(Buffer.concat([Buffer.from(int32(startup.length + 4)), startup]));
  return { exchange, end: () => socket.end(wire('X')) };
}

/** Each run boots Node, and one of them the embedded database; the machine may be busy. */
const processes = 240_000;

describe('a roster db serve client and the session every Roster process shares', () => {
  it('refuses what would change the shared session, says what to do instead, and leaves the CLI, chat and /healthz working', async () => {
    const dir = dataDir();
    const env = { ROSTER_DATA_DIR: dir };
    expect((await runRoster(['agent', 'add', '--name', 'A', '--job', 'keeps notes'], env)).code).toBe(0);
    const { roster: start, address } = await startListening(env);
    running(start);
    const { client, connectionString } = await served(dir);
    const before = (await outcome(client, sessionState)) as { rows: unknown[] };
    expect(before.rows).toEqual([{ role: 'roster_owner', session: 'roster_owner', read_only: 'off', prepared: 0, temp_tables: 0, listening: 0 }]);

    const refusals: Array<[string, RegExp, RegExp]> = [
      ['set role roster_ops', /SET ROLE/, /BEGIN; SET LOCAL ROLE roster_ops; …; COMMIT;/],
      ['set default_transaction_read_only = on', /SET and RESET/, /SET LOCAL/],
      ['SET SESSION AUTHORIZATION roster_app', /SET SESSION AUTHORIZATION/, /SET LOCAL ROLE/],
      ['reset session authorization', /SET SESSION AUTHORIZATION/, /SET LOCAL ROLE/],
      ['prepare listing as select name from agents', /prepared statements/, /unnamed statements/],
      ['create temp table agents (name text)', /temporary/, /WITH query/],
      ['listen x', /LISTEN/, /server Postgres/],
      [`select set_config('role', 'roster_ops', false)`, /set_config/, /set_config\(name, value, true\)/],
      [`select 1; /* a comment; */ set search_path = 'nowhere'`, /SET and RESET/, /SET LOCAL/],
      [`do $$ begin set role roster_ops; end $$`, /SET ROLE/, /SET LOCAL ROLE/],
      [`select pg_advisory_lock(42)`, /advisory locks/, /pg_advisory_xact_lock/],
      // Not session state, but the database's socket server cannot take COPY's rows: it would stop for everyone.
      ['copy agents (name, job) from stdin', /COPY … FROM STDIN/, /INSERT/],
      // An escape string that ends in a backslash ends there: what follows is a statement.
      [`select E'\\\\'; set role roster_ops`, /SET ROLE/, /SET LOCAL ROLE/],
    ];
    for (const [statement, message, hint] of refusals) {
      const seen = (await outcome(client, statement)) as { code: string; message: string; hint: string };
      expect(seen.code, statement).toBe('0A000');
      expect(seen.message, statement).toMatch(/^roster db serve: /);
      expect(seen.message, statement).toMatch(message);
      expect(seen.hint, statement).toMatch(hint);
    }
    // The extended protocol, as drivers send it: a named statement, and a parameterised set_config.
    expect(await outcome(client, 'select name from agents', [], 'listing')).toMatchObject({ code: '0A000', message: expect.stringMatching(/prepared statements/) });
    expect(await outcome(client, 'select set_config($1, $2, false)', ['role', 'roster_ops'])).toMatchObject({ code: '0A000', message: expect.stringMatching(/set_config/) });
    // Words in strings and comments are not statements: these run.
    const quoted: Array<[string, string]> = [
      [`select 'it''s; set role roster_ops' as text`, "it's; set role roster_ops"],
      [`select $tag$ $$; reset all $tag$ as text`, ' $$; reset all '],
      [`select E'\\'; set role roster_ops' as text`, "'; set role roster_ops"],
      [`/* set role roster_ops; /* nested; */ reset all; */ select 'ok' as text -- ; set role roster_ops`, 'ok'],
    ];
    for (const [statement, text] of quoted) expect(await outcome(client, statement), statement).toEqual({ rows: [{ text }] });
    // Nothing of it reached the session, and the connection is still usable.
    expect(await outcome(client, sessionState)).toEqual(before);

    // The other processes work beside it, the client still connected.
    const added = await runRoster(['agent', 'add', '--name', 'B', '--job', 'keeps lists'], env);
    expect(added.code, added.stderr).toBe(0);
    const listing = await runRoster(['agent', 'list'], env);
    expect(listing.code, listing.stderr).toBe(0);
    expect(listing.stdout).toMatch(/^A\s+offline/m);
    expect(listing.stdout).toMatch(/^B\s+offline/m);
    const chat = await runRoster(['chat', '--agent', 'A', 'remember that the door is blue'], env);
    expect(chat.code, chat.stderr).toBe(0);
    expect(chat.stdout.trim()).toBe('Noted: the door is blue');
    const migrate = await runRoster(['migrate'], env);
    expect(migrate.code, migrate.stderr).toBe(0);
    const health = await fetch(`${address}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ ok: true, database: 'embedded' });

    // What is confined to the client's own statement or transaction works: reads, writes, SET LOCAL, set_config(…, true).
    expect(await outcome(client, 'select name from agents order by name')).toEqual({ rows: [{ name: 'A' }, { name: 'B' }] });
    expect(await outcome(client, `update agents set job = 'keeps long lists' where name = $1 returning job`, ['B'])).toEqual({ rows: [{ job: 'keeps long lists' }] });
    expect(await outcome(client, 'begin')).toEqual({ rows: [] });
    expect(await outcome(client, 'set local role roster_ops')).toEqual({ rows: [] });
    expect(await outcome(client, `select current_user as role, set_config('statement_timeout', '5s', true) as timeout`)).toEqual({ rows: [{ role: 'roster_ops', timeout: '5s' }] });
    expect(await outcome(client, 'select count(*)::int as agents from agents')).toEqual({ rows: [{ agents: 2 }] });
    expect(await outcome(client, 'commit')).toEqual({ rows: [] });
    expect(await outcome(client, sessionState)).toEqual(before);
    expect(await outcome(client, `select current_setting('statement_timeout') as timeout`)).toEqual({ rows: [{ timeout: '0' }] });

    // A refusal inside a transaction aborts it, as any error does in Postgres; ROLLBACK ends it and the connection goes on.
    expect(await outcome(client, 'begin')).toEqual({ rows: [] });
    expect(await outcome(client, 'set role roster_ops')).toMatchObject({ code: '0A000' });
    expect(await outcome(client, 'select 1 as one')).toMatchObject({ code: '25P02' });
    expect(await outcome(client, 'rollback')).toEqual({ rows: [] });
    expect(await outcome(client, sessionState)).toEqual(before);

    // The write through the served connection is what the other processes see.
    const after = await runRoster(['agent', 'list', '--json'], env);
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout).toContain('keeps long lists');
    const recall = await runRoster(['chat', '--agent', 'A', 'what do you know about the door?'], env);
    expect(recall.code, recall.stderr).toBe(0);
    expect(recall.stdout).toMatch(/^- the door is blue$/m);

    // A Roster process that uses the served connection itself (its scopes use SET LOCAL and set_config(…, true)) passes the gate.
    await client.end();
    const through = { ROSTER_DATA_DIR: dir, DATABASE_URL: connectionString };
    const remembered = await runRoster(['chat', '--agent', 'A', 'remember that the bike is green'], through);
    expect(remembered.code, remembered.stderr).toBe(0);
    expect(remembered.stdout.trim()).toBe('Noted: the bike is green');
    const memory = await runRoster(['memory', 'list', '--agent', 'A', '--json'], env);
    expect(memory.code, memory.stderr).toBe(0);
    expect(memory.stdout).toContain('the bike is green');
  }, processes);

  it('answers a pipelined extended-protocol batch as Postgres would: the statements before the refused one run, the rest are skipped to Sync', async () => {
    const dir = dataDir();
    const port = await freePort();
    const serve = running(startRoster(['db', 'serve', '--port', String(port)], { ROSTER_DATA_DIR: dir }));
    const [connectionString] = (await serve.waitForOutput(/postgres:\/\/roster:[A-Za-z0-9_-]{24}@\S+/)) as RegExpMatchArray;
    const client = await rawClient(connectionString!);
    cleanups.push(() => client.end());

    const parse = (sql: string, name = '') => wire('P', name, sql, int16(0));
    const bind = wire('B', '', '', int16(0), int16(0), int16(0));
    const describe = wire('D', 'P');
    const execute = wire('E', '', int32(0));
    const sync = wire('S');
    // One batch: a statement that runs, then a refused one, then one that Postgres would skip after an error.
    const batch = await client.exchange(parse('select 1 as one'), bind, execute, parse('set role roster_ops'), bind, describe, execute, parse('select 2'), bind, execute, sync);
    expect(batch).toEqual(['1', '2', 'D 1', 'C', expect.stringMatching(/^E roster db serve: SET ROLE/), 'Z']);
    // A named statement, flushed before its Sync, and a fastpath call of set_config (OID 2078) are refused the same way.
    expect(await client.exchange(parse('select 1', 'named'), wire('H'), sync)).toEqual([expect.stringMatching(/^E roster db serve: prepared statements/), 'Z']);
    const text = (value: string) => [...int32(Buffer.byteLength(value)), ...Buffer.from(value)];
    const fastpath = wire('F', int32(2078), int16(0), int16(3), text('role'), text('roster_ops'), text('false'), int16(0));
    expect(await client.exchange(fastpath)).toEqual([expect.stringMatching(/^E roster db serve: the fastpath function call/), 'Z']);
    // The connection goes on, in the session as it was.
    expect(await client.exchange(parse('select current_user'), bind, execute, sync)).toEqual(['1', '2', 'D roster_owner', 'C', 'Z']);
    expect(await client.exchange(wire('Q', 'select current_user'))).toEqual(['T', 'D roster_owner', 'C', 'Z']);
  }, processes);
});
