import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createPoolDatabase, type Database } from './database.js';
import { loadMigrations, migrate } from './migrate.js';
import { openServerDatabase } from './open.js';
import { openPglite } from './pglite-open.js';
import { pglitePool } from './pglite-connection.js';

export interface TestDatabase {
  database: Database;
  /** `embedded` (PGlite in memory) or `server` (a fresh database on TEST_DATABASE_URL). */
  kind: 'embedded' | 'server';
  /** Closes the database and, on a server, drops the database made for this test. */
  cleanup(): Promise<void>;
}

/**
 * A database of its own for one test: PGlite in memory, or, when
 * `TEST_DATABASE_URL` names a server Postgres with pgvector, a new database
 * created on it and dropped afterwards. Shared tables are never touched.
 */
export async function openTestDatabase(options: { migrate?: boolean; serverUrl?: string | undefined } = {}): Promise<TestDatabase> {
  const serverUrl = options.serverUrl ?? process.env.TEST_DATABASE_URL;
  let database: Database;
  let dropDatabase = async () => {};
  if (serverUrl === undefined || serverUrl === '') {
    database = await openImage(await embeddedImage(options.migrate !== false));
  } else {
    const created = await createTestServerDatabase(serverUrl);
    database = await openServerDatabase(created.url);
    dropDatabase = created.drop;
  }
  if (options.migrate !== false) await migrate(database);
  return {
    database,
    kind: database.kind,
    async cleanup() {
      await database.close();
      await dropDatabase();
    },
  };
}

/** A database made for one test on a server Postgres: its URL, and how to drop it. */
export interface TestServerDatabase {
  name: string;
  /** `serverUrl` with this database's name in place of the one it named. */
  url: string;
  /** Drops the database, closing any connection still open to it. */
  drop(): Promise<void>;
}

/**
 * A new, empty database on the server `serverUrl` names (an administrator's
 * connection, such as TEST_DATABASE_URL), named `roster_test_…`: for a test
 * that opens it itself or hands its URL to `roster` as DATABASE_URL.
 */
export async function createTestServerDatabase(serverUrl: string): Promise<TestServerDatabase> {
  const name = `roster_test_${randomUUID().replaceAll('-', '')}`;
  const administer = async (statement: string) => {
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    try {
      await admin.query(statement);
    } finally {
      await admin.end();
    }
  };
  await administer(`create database ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { name, url: url.toString(), drop: () => administer(`drop database if exists ${name} with (force)`) };
}

/** An in-memory embedded database started from an image of a data folder. */
async function openImage(image: Blob | undefined): Promise<Database> {
  const { pglite, release } = await openPglite('memory://', image === undefined ? {} : { image });
  return createPoolDatabase({ kind: 'embedded', location: 'memory://', pool: pglitePool(pglite), onClose: release });
}

const images = new Map<boolean, Promise<Blob>>();

/**
 * The image every in-memory test database starts from: a cluster made by
 * the same bootstrap as any embedded database, migrated or not. Booting
 * Postgres in WebAssembly (its initdb) is most of what a new database costs,
 * so the image is made once and kept in the temp folder under a name that
 * changes with the migrations and the PGlite build.
 */
function embeddedImage(migrated: boolean): Promise<Blob> {
  let image = images.get(migrated);
  if (image === undefined) {
    image = makeImage(migrated);
    images.set(migrated, image);
  }
  return image;
}

/** A name that changes with the PGlite build. */
function engineHash(): ReturnType<typeof createHash> {
  const engine = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const stat = fs.statSync(engine);
  return createHash('sha256').update(`${engine}:${stat.size}:${stat.mtimeMs}`);
}

let migrations: string | undefined;

/**
 * The migrations' names and checksums, read once per process: a test data
 * folder is named by them, and a test makes one folder after another.
 */
function migrationsDigest(): string {
  migrations ??= loadMigrations()
    .map((migration) => `${migration.name}:${migration.checksum}`)
    .join('');
  return migrations;
}

/**
 * Where an embedded cluster that test data folders start from is kept: a
 * folder made once by the same bootstrap as a first start (`makeClusterTemplate`).
 * A copy of it in `<data folder>/pglite` spares each test its initdb and, when
 * `migrated` (named then by the migrations' checksums too), its migrations.
 */
export function clusterTemplateDir(options: { migrated: boolean }): string {
  const hash = engineHash();
  if (options.migrated) hash.update(migrationsDigest());
  return path.join(os.tmpdir(), `roster-test-cluster-${options.migrated ? 'migrated-' : ''}${hash.digest('hex').slice(0, 20)}`);
}

/** Make both cluster templates, bare and migrated, if they are not there yet. */
export async function makeClusterTemplate(): Promise<void> {
  for (const migrated of [false, true]) {
    const target = clusterTemplateDir({ migrated });
    if (fs.existsSync(target)) continue;
    const building = `${target}.${process.pid}`;
    fs.rmSync(building, { recursive: true, force: true });
    const { pglite, release } = await openPglite(building);
    const database = createPoolDatabase({ kind: 'embedded', location: building, pool: pglitePool(pglite) });
    try {
      if (migrated) await migrate(database);
    } finally {
      await database.close();
      await release();
    }
    fs.rmSync(path.join(building, 'roster.lock'), { force: true });
    try {
      fs.renameSync(building, target);
    } catch {
      // Made meanwhile by another run.
      fs.rmSync(building, { recursive: true, force: true });
    }
  }
}

async function makeImage(migrated: boolean): Promise<Blob> {
  const hash = engineHash().update(`:${migrated}`);
  if (migrated) hash.update(migrationsDigest());
  const file = path.join(os.tmpdir(), `roster-test-database-${hash.digest('hex').slice(0, 20)}.tar`);
  try {
    return new Blob([fs.readFileSync(file)]);
  } catch {
    // Not made yet: make it below.
  }
  const { pglite, release } = await openPglite('memory://');
  const database = createPoolDatabase({ kind: 'embedded', location: 'memory://', pool: pglitePool(pglite) });
  let image: Blob;
  try {
    if (migrated) await migrate(database);
    image = (await pglite.dumpDataDir('none')) as Blob;
  } finally {
    await database.close();
    await release();
  }
  const written = `${file}.${process.pid}`;
  fs.writeFileSync(written, Buffer.from(await image.arrayBuffer()));
  fs.renameSync(written, file);
  return image;
}
