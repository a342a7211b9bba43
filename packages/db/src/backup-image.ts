import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { makePrivateFolder, privateFileMode, privateFolderMode, redactUrl, type Config } from '@roster/config';
import { RosterError } from '@roster/errors';
import pg from 'pg';
import type { Database } from './database.js';
import { hostOnlyEntries, requestImage } from './embedded-image.js';
import { canShareFolder } from './host-socket.js';
import { embeddedDataDir } from './open.js';

type Target = Pick<Config, 'DATABASE_URL' | 'ROSTER_DATA_DIR'>;

/**
 * The database's content for a backup. Embedded: PGlite's image of its data
 * folder, taken by the process that holds it (a checkpoint first, so that
 * little write-ahead log is replayed on opening). Server: `pg_dump` of
 * Roster's schema, the migration ledger included.
 */
export async function takeDatabaseImage(config: Target, database: Database): Promise<Buffer> {
  if (config.DATABASE_URL !== undefined) return pgDump(config.DATABASE_URL);
  const dataDir = path.resolve(embeddedDataDir(config.ROSTER_DATA_DIR));
  if (!canShareFolder(dataDir)) {
    throw new RosterError('backup_path_too_long', `The data folder's path is too long for the socket that backups use (${dataDir}): move it to a shorter path, or stop Roster and copy the folder.`);
  }
  await database.ownerSession('backup: checkpoint before the image', (session) => session.query('checkpoint'));
  return requestImage(dataDir);
}

/** Whether a restore may write here: no embedded database in the data folder, or an empty server database. Says what is there when not. */
export async function checkRestoreTarget(config: Target): Promise<void> {
  if (config.DATABASE_URL !== undefined) {
    const tables = await withClient(config.DATABASE_URL, async (client) => {
      const { rows } = await client.query<{ count: string }>(`select count(*) from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public' and c.relkind in ('r', 'p')`);
      return Number(rows[0]?.count ?? 0);
    });
    if (tables > 0) throw new RosterError('restore_target_not_empty', `The database at ${redactUrl(config.DATABASE_URL)} is not empty (${tables} tables): restore into a new, empty database.`);
    return;
  }
  const dataDir = embeddedDataDir(config.ROSTER_DATA_DIR);
  const entries = fs.existsSync(dataDir) ? fs.readdirSync(dataDir) : [];
  if (entries.length > 0) throw new RosterError('restore_target_not_empty', `The data folder ${config.ROSTER_DATA_DIR} already holds a database (${dataDir}): restore into a new, empty data folder.`);
}

/** Put a backup's database in place; the target was checked empty. Embedded: written beside, then renamed in, so a failure leaves nothing. */
export async function restoreDatabaseImage(config: Target, content: Buffer): Promise<void> {
  if (config.DATABASE_URL !== undefined) {
    await psqlRestore(config.DATABASE_URL, content);
    return;
  }
  makePrivateFolder(config.ROSTER_DATA_DIR);
  const dataDir = embeddedDataDir(config.ROSTER_DATA_DIR);
  const staging = `${dataDir}.restoring-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  try {
    extractTar(content, staging);
    // Checked empty: rmdir removes nothing else.
    if (fs.existsSync(dataDir)) fs.rmdirSync(dataDir);
    fs.renameSync(staging, dataDir);
  } catch (error) {
    fs.rmSync(staging, { recursive: true, force: true });
    throw new RosterError('restore_failed', `The backup could not be written to ${dataDir}: ${(error as Error).message}. Nothing was left behind.`, { cause: error });
  }
}

/** Unpack a tar (as PGlite writes it) into `folder`, leaving out what belongs to a running host; folders 700, files 600. */
function extractTar(tar: Buffer, folder: string): void {
  makePrivateFolder(folder);
  let offset = 0;
  while (offset + 512 <= tar.length) {
    const block = tar.subarray(offset, offset + 512);
    if (block.every((byte) => byte === 0)) break;
    const field = (start: number, length: number) => block.subarray(start, start + length).toString('utf8').replace(/\0.*$/s, '');
    const prefix = field(257, 6).startsWith('ustar') ? field(345, 155) : '';
    const name = (prefix === '' ? field(0, 100) : `${prefix}/${field(0, 100)}`).replace(/^\/+/, '');
    const size = Number.parseInt(field(124, 12).trim() || '0', 8);
    const type = field(156, 1);
    offset += 512;
    const data = tar.subarray(offset, offset + size);
    offset += Math.ceil(size / 512) * 512;
    const parts = name.split('/').filter((part) => part !== '' && part !== '.');
    if (parts.length === 0 || parts.includes('..') || hostOnlyEntries.has(parts[0]!)) continue;
    const target = path.join(folder, ...parts);
    if (type === '5') {
      fs.mkdirSync(target, { recursive: true, mode: privateFolderMode });
    } else if (type === '0' || type === '') {
      fs.mkdirSync(path.dirname(target), { recursive: true, mode: privateFolderMode });
      fs.writeFileSync(target, data, { mode: privateFileMode });
    }
  }
}

/** The password of a connection string goes to its child by the environment, not on a command line every account can read. */
function clientEnvironment(url: string): { url: string; env: NodeJS.ProcessEnv } {
  const parsed = new URL(url);
  const password = decodeURIComponent(parsed.password);
  parsed.password = '';
  return { url: parsed.toString(), env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...(password === '' ? {} : { PGPASSWORD: password }) } };
}

function runTool(tool: string, args: string[], env: NodeJS.ProcessEnv, input?: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(tool, args, { env, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let err = '';
    child.stdout!.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    child.on('error', (error: NodeJS.ErrnoException) => {
      reject(
        error.code === 'ENOENT'
          ? new RosterError('backup_tool_missing', `${tool} is not on PATH: a server database is backed up and restored with the PostgreSQL client tools (the postgresql-client package of the server's version).`)
          : error,
      );
    });
    child.on('close', (code) => {
      if (code === 0) resolve(Buffer.concat(out));
      else reject(new RosterError('backup_tool_failed', `${tool} failed (exit ${code}): ${err.trim().split('\n').slice(-2).join(' ')}`));
    });
    if (input !== undefined) child.stdin!.end(input);
  });
}

/**
 * pg_dump of the public schema (Roster's tables, the migration ledger among
 * them), owners left out. It reads as roster_ops, under row-level security:
 * the tables force it on their owner, so a plain owner role (a managed
 * Postgres's) reading with it off is refused, and with it on as itself sees
 * no rows; roster_ops reads every table and every row, as the owner's tools do.
 */
async function pgDump(url: string): Promise<Buffer> {
  const { url: bare, env } = clientEnvironment(url);
  return runTool('pg_dump', ['--dbname', bare, '--format=plain', '--schema=public', '--no-owner', '--quote-all-identifiers', '--role=roster_ops', '--enable-row-security'], env);
}

/** Load a pg_dump into an empty database in one transaction, after pgvector and Roster's roles are made ready. */
async function psqlRestore(url: string, dump: Buffer): Promise<void> {
  const { url: bare, env } = clientEnvironment(url);
  const prelude = `
create extension if not exists vector;
do $roles$ begin
  if not exists (select 1 from pg_roles where rolname = 'roster_app') then create role roster_app nologin noinherit; end if;
  if not exists (select 1 from pg_roles where rolname = 'roster_ops') then create role roster_ops nologin; end if;
end $roles$;
`;
  // The schema exists in every new database: its own creation would fail the transaction.
  const body = dump.toString('utf8').replace(/^CREATE SCHEMA "?public"?;$/m, '');
  await runTool('psql', ['--dbname', bare, '--single-transaction', '--quiet', '-v', 'ON_ERROR_STOP=1', '--file=-'], env, Buffer.from(prelude + body, 'utf8'));
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (error) {
    throw new RosterError('database_unreachable', `DATABASE_URL is not reachable (${redactUrl(url)}): ${(error as Error).message}.`, { cause: error });
  }
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
