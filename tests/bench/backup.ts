/**
 * Backup and restore of an installation holding 10,000 facts (`--facts N`):
 * `roster backup` and `roster restore` as an operator runs them (the built
 * CLI), the time each command takes from start to exit, the copy's own time
 * (the header's `tookMs`) and the file's size. On the embedded database
 * always; on a server Postgres when TEST_DATABASE_URL names one (an
 * administrator's connection, which makes the databases; the dump reads as
 * roster_ops, so any owner role would do).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHashingEmbedder, ensureEmbeddingModel } from '@roster/memory';
import { embeddedInstallation, serverInstallation, type TestInstallation } from '../support/installation.js';
import { runRoster, tempDataDir } from '../support/roster-process.js';
import { bulkLoadFacts, createScopes } from './bulk-load.js';
import { formatMs, progress, type BenchmarkReport } from './report.js';

export const title = 'Backup and restore: 10,000 facts';

async function timed(args: string[], env: Record<string, string>): Promise<{ ms: number; stdout: string }> {
  const started = performance.now();
  const result = await runRoster(args, env, 30 * 60_000);
  const ms = performance.now() - started;
  if (result.code !== 0) throw new Error(`roster ${args.join(' ')} failed: ${result.stderr}`);
  return { ms, stdout: result.stdout };
}

async function measure(installation: TestInstallation, facts: number): Promise<string[]> {
  const env = { ...installation.env, ROSTER_SECRET_KEY: installation.env.ROSTER_SECRET_KEY ?? randomBytes(32).toString('hex') };
  await timed(['migrate'], env);
  const database = await installation.openDatabase();
  try {
    const scopes = await createScopes(database, 10);
    const embedder = createHashingEmbedder();
    await bulkLoadFacts(database, embedder, Array.from({ length: facts }, (_, index) => ({ scope: scopes[index % scopes.length]!, content: `fact ${index}: the ${index % 97}th shelf holds box ${index * 7}` })));
    await ensureEmbeddingModel(database, embedder.model, embedder.dimensions);
  } finally {
    await database.close();
  }
  const folder = tempDataDir({ fresh: true });
  try {
    const file = path.join(folder, 'bench.backup');
    progress(`${installation.kind}: backup of ${facts} facts`);
    const backup = await timed(['backup', '--out', file, '--json'], env);
    const header = JSON.parse(backup.stdout) as { tookMs: number };
    const bytes = fs.statSync(file).size;
    let restoreMs = Number.NaN;
    if (installation.kind === 'embedded') {
      progress('embedded: restore into a new folder');
      restoreMs = (await timed(['restore', file], { ROSTER_DATA_DIR: path.join(folder, 'restored'), ROSTER_SECRET_KEY: env.ROSTER_SECRET_KEY })).ms;
    } else {
      const target = await serverInstallation(process.env.TEST_DATABASE_URL!);
      try {
        progress('server: restore into a new database');
        restoreMs = (await timed(['restore', file], { ...target.env, ROSTER_SECRET_KEY: env.ROSTER_SECRET_KEY })).ms;
      } finally {
        await target.remove();
      }
    }
    return [installation.kind, String(facts), formatMs(backup.ms), formatMs(header.tookMs), `${(bytes / 1024 / 1024).toFixed(1)} MB`, formatMs(restoreMs)];
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
  }
}

export async function run(args: readonly string[]): Promise<BenchmarkReport> {
  const index = args.indexOf('--facts');
  const facts = index >= 0 ? Number(args[index + 1]) : 10_000;
  const rows: string[][] = [];
  const embedded = await embeddedInstallation();
  try {
    rows.push(await measure(embedded, facts));
  } finally {
    await embedded.remove();
  }
  const findings: string[] = [];
  if (process.env.TEST_DATABASE_URL !== undefined) {
    const server = await serverInstallation(process.env.TEST_DATABASE_URL);
    try {
      rows.push(await measure(server, facts));
    } finally {
      await server.remove();
    }
  } else {
    findings.push('The server Postgres was not measured: TEST_DATABASE_URL was not set on this machine.');
  }
  findings.push(`The machine's load average at the end: ${os.loadavg().map((value) => value.toFixed(1)).join(', ')} (1, 5 and 15 minutes) on ${os.cpus().length} cores; a shared machine's figures are upper bounds.`);
  return {
    notes: [
      'Each command is timed from its start to its exit, as an operator waits for it (a Node start and the database opening included). ' +
        '"copy" is the backup header\'s `tookMs`: the image of the embedded folder (taken under PGlite\'s query lock, so the time turns wait) or the `pg_dump`. ' +
        'The file is gzipped and sealed. The facts are bulk-loaded with their vectors (hashing embedder), in 10 scopes.',
    ],
    tables: [{ title: 'roster backup and roster restore', columns: ['database', 'facts', 'backup command (ms)', 'copy (ms)', 'file', 'restore command (ms)'], rows }],
    findings,
  };
}
