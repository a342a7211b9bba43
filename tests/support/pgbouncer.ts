/**
 * Debian's PgBouncer in transaction pooling mode in front of a server
 * Postgres, started by a test in a folder of its own on a free loopback port,
 * as an operator would run it (docs/operations.md, "PgBouncer").
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { until } from '@roster/channels/testing';
import { freePort } from './roster-process.js';

export interface PgBouncer {
  port: number;
  /** `url` (a connection to the server Postgres) as it goes through PgBouncer instead. */
  through(url: string): string;
  /** A statement on PgBouncer's admin console (SHOW STATS, SHOW CONFIG): its rows. */
  admin(statement: string): Promise<Array<Record<string, unknown>>>;
  stop(): Promise<void>;
}

/** Where Debian installs it; else the PATH. */
function executable(): string {
  return fs.existsSync('/usr/sbin/pgbouncer') ? '/usr/sbin/pgbouncer' : 'pgbouncer';
}

export async function startPgBouncer(serverUrl: string): Promise<PgBouncer> {
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username) || os.userInfo().username;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-pgbouncer-'));
  const port = await freePort();
  // Every database of the server, under its own name; the password (if any) is the server's, given to PgBouncer to pass on.
  const password = decodeURIComponent(server.password);
  fs.writeFileSync(path.join(dir, 'userlist.txt'), `"${user}" "${password}"\n`);
  fs.writeFileSync(
    path.join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || 5432}${password === '' ? '' : ` password=${password}`}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      `auth_type = ${password === '' ? 'trust' : 'plain'}`,
      `auth_file = ${path.join(dir, 'userlist.txt')}`,
      `admin_users = ${user}`,
      'pool_mode = transaction',
      'default_pool_size = 10',
      'max_client_conn = 500',
      `pidfile = ${path.join(dir, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
  );
  // PgBouncer refuses to run as root: it drops to an account of no privilege, which must read its folder.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'nobody']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'nobody']).toString().trim());
    for (const file of ['', 'userlist.txt', 'pgbouncer.ini']) fs.chownSync(path.join(dir, file), uid, gid);
  }
  const child: ChildProcess = spawn(executable(), [...(asRoot ? ['-u', 'nobody'] : []), path.join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (chunk) => (log += chunk));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const connect = async (database: string) => {
    const client = new pg.Client({ host: '127.0.0.1', port, user, database, ...(password === '' ? {} : { password }) });
    client.on('error', () => {});
    await client.connect();
    return client;
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`pgbouncer exited with ${child.exitCode}: ${log}`);
        try {
          const client = await connect('pgbouncer');
          await client.end();
          return true;
        } catch {
          return false;
        }
      },
      'pgbouncer to accept connections',
      20_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    port,
    through(url) {
      const routed = new URL(url);
      routed.hostname = '127.0.0.1';
      routed.port = String(port);
      return routed.toString();
    },
    async admin(statement) {
      const client = await connect('pgbouncer');
      try {
        return (await client.query(statement)).rows as Array<Record<string, unknown>>;
      } finally {
        await client.end();
      }
    },
    stop,
  };
}
