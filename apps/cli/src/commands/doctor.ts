import { channelPlugins } from '@roster/channel-registry';
import { createChannelCredentialStore } from '@roster/channel-host';
import { loadInstallationKey, parseRedisUrl, redactUrl, type Config, type InstallationKey, type Logger } from '@roster/config';
import { compareVersions, loadMigrations, minimumPgvector, openDatabase, probeWrites, type Database } from '@roster/db';
import { checkModelReference } from '@roster/engines';
import { checkChannels, type OpenedCredentials } from '@roster/gateway';
import { noJudgeNotice } from '@roster/learning';
import { redisStatus } from '@roster/redis';
import type { CommandIo } from '../io.js';
import { exitCode } from '../io.js';
import { parseCommand } from '../parse.js';
import { loadConfig } from '../runtime.js';

/** One line of the doctor's table. `off` is a part that is simply not configured. */
export interface Check {
  name: string;
  status: 'ok' | 'fail' | 'off';
  detail: string;
}

/**
 * Check every part Roster depends on, one line each, and say what is wrong.
 * It changes nothing but the health probe's one row (a time, written again
 * to prove the database takes writes): it neither migrates nor starts Redis.
 */
export async function runDoctor(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseCommand(args, { json: { type: 'boolean' }, deep: { type: 'boolean' } });
  const { config, logger } = loadConfig(io);
  const checks: Check[] = [];

  let database: Database | undefined;
  try {
    database = await openDatabase({ config, logger });
  } catch (error) {
    checks.push({ name: 'database', status: 'fail', detail: (error as Error).message });
  }
  let key: InstallationKey | undefined;
  try {
    key = loadInstallationKey(config);
  } catch (error) {
    checks.push({ name: 'key', status: 'fail', detail: (error as Error).message });
  }
  let stored: OpenedCredentials = {};
  try {
    if (database !== undefined) {
      checks.push(...(await databaseChecks(database)));
      if (values.deep === true) checks.push(await readEveryTable(database));
      if (key !== undefined) {
        const keyed = await keyCheck(database, key);
        checks.push(keyed);
        if (keyed.status === 'ok') stored = await storedCredentials(database, key, checks);
      }
    }
    await otherChecks({ config, logger, ...(database === undefined ? {} : { database }), ...(key === undefined ? {} : { key }) }, stored, checks);
  } finally {
    await database?.close();
  }

  if (values.json === true) io.out(JSON.stringify({ ok: checks.every((c) => c.status !== 'fail'), checks }));
  else {
    const width = Math.max(...checks.map((check) => check.name.length));
    for (const check of checks) io.out(`${check.name.padEnd(width)}  ${check.status.padEnd(4)}  ${check.detail}`);
  }
  return checks.some((check) => check.status === 'fail') ? exitCode.failure : exitCode.ok;
}

/** Redis, the models and the channels (WhatsApp's link is read from the database while it is open). */
async function otherChecks(
  { config, logger, database, key }: { config: Config; logger: Logger; database?: Database; key?: InstallationKey },
  stored: OpenedCredentials,
  checks: Check[],
): Promise<void> {
  const redis = await redisStatus(config.REDIS_URL);
  checks.push(
    redis === 'ok'
      ? { name: 'redis', status: 'ok', detail: redactUrl(config.REDIS_URL) }
      : {
          name: 'redis',
          status: 'fail',
          detail: `${redis}. ${parseRedisUrl(config.REDIS_URL).kind === 'cluster' ? 'Start the cluster’s nodes: roster start does not replace a cluster.' : 'roster start would start a private redis-server if one is installed.'}`,
        },
  );
  checks.push(await modelCheck('engine', config.ROSTER_ENGINE, config));
  checks.push(await judgeCheck(config));
  checks.push(await modelCheck('embedder', config.ROSTER_EMBEDDER, config));
  // A configured token is tried against its platform: ok only when the platform takes it.
  const channels = await checkChannels(config, {
    stored: { credentials: stored, bindings: [] },
    logger,
    ...(database === undefined ? {} : { database }),
    ...(key === undefined ? {} : { key }),
  });
  for (const channel of channels) checks.push({ name: channel.channel, status: channel.status, detail: channel.detail });
}

/**
 * The installation key: where it comes from, and whether it is the one the
 * database was keyed with (a process with another key is refused at start).
 */
async function keyCheck(database: Database, key: InstallationKey): Promise<Check> {
  const bound = await database.ownerScope('doctor: read the installation key fingerprint', async (tx) => {
    const table = await tx.query<{ exists: boolean }>(`select to_regclass('installation_key') is not null as exists`);
    if (table.rows[0]?.exists !== true) return null;
    const { rows } = await tx.query<{ fingerprint: string }>('select fingerprint from installation_key');
    return rows[0]?.fingerprint ?? null;
  });
  if (bound !== null && bound !== key.fingerprint) {
    return { name: 'key', status: 'fail', detail: `this process holds ${key.fingerprint} (from ${key.source}), but the database is keyed with ${bound}: use that key` };
  }
  return { name: 'key', status: 'ok', detail: `${key.fingerprint} from ${key.source}${bound === null ? ' (the database is keyed on first start)' : ''}` };
}

/** The stored channel credentials, opened; a failure to open them is a failed line, not a crash. */
async function storedCredentials(database: Database, key: InstallationKey, checks: Check[]): Promise<OpenedCredentials> {
  try {
    const exists = await database.ownerScope('doctor: look for stored channel credentials', async (tx) => {
      const { rows } = await tx.query<{ exists: boolean }>(`select to_regclass('channel_credentials') is not null as exists`);
      return rows[0]?.exists === true;
    });
    return exists ? await createChannelCredentialStore(database, key, channelPlugins).open() : {};
  } catch (error) {
    checks.push({ name: 'credentials', status: 'fail', detail: `stored channel credentials could not be opened: ${(error as Error).message}` });
    return {};
  }
}

async function databaseChecks(database: Database): Promise<Check[]> {
  const checks: Check[] = [];
  const info = await database.info();
  checks.push({
    name: 'database',
    status: 'ok',
    detail: `${database.kind === 'embedded' ? 'embedded (PGlite)' : 'server'} Postgres ${info.postgres} at ${database.location}`,
  });
  if (info.pgvector === null) {
    checks.push({ name: 'pgvector', status: 'fail', detail: 'the vector extension is not created yet: run roster migrate' });
  } else if (compareVersions(info.pgvector, minimumPgvector) < 0) {
    checks.push({ name: 'pgvector', status: 'fail', detail: `${info.pgvector} is older than ${minimumPgvector}: upgrade pgvector, then ALTER EXTENSION vector UPDATE` });
  } else {
    checks.push({ name: 'pgvector', status: 'ok', detail: info.pgvector });
  }
  const latest = loadMigrations().at(-1)?.version ?? 0;
  const version = await database.ownerScope('doctor: read the migration ledger', async (tx) => {
    const ledger = await tx.query<{ exists: boolean }>(`select to_regclass('roster_migrations') is not null as exists`);
    if (ledger.rows[0]?.exists !== true) return 0;
    const { rows } = await tx.query<{ version: number | null }>('select max(version) as version from roster_migrations');
    return rows[0]?.version ?? 0;
  });
  checks.push(
    version === latest
      ? { name: 'migrations', status: 'ok', detail: `at version ${version}` }
      : version < latest
        ? { name: 'migrations', status: 'fail', detail: `at version ${version} of ${latest}: run roster migrate` }
        : { name: 'migrations', status: 'fail', detail: `at version ${version}, newer than this Roster (${latest}): run a newer Roster` },
  );
  if (version > 0) checks.push(await rolesCheck(database));
  if (version === latest) {
    // As /healthz: a write that needs a new page, so a full disk fails here as a turn's write does.
    const writes = await probeWrites(database);
    checks.push(writes === 'ok' ? { name: 'writes', status: 'ok', detail: 'a new page was written and committed' } : { name: 'writes', status: 'fail', detail: writes });
  }
  return checks;
}

/**
 * `--deep`: read every row of every table, its long values (TOAST) and its
 * indexes' tables included, so that a damaged page is found now rather than
 * by the turn that needs it. The first table that cannot be read is named,
 * with what Postgres said; nothing is changed or repaired.
 */
async function readEveryTable(database: Database): Promise<Check> {
  const tables = await database.ownerScope('doctor: list the tables', async (tx) => {
    const { rows } = await tx.query<{ name: string }>(`select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public' and c.relkind = 'r' order by 1`);
    return rows.map((row) => row.name);
  });
  let rows = 0;
  for (const table of tables) {
    try {
      const read = await database.ownerScope(`doctor: read ${table}`, async (tx) => {
        // The whole row as text: every column read, long values fetched from TOAST.
        const { rows: counted } = await tx.query<{ rows: string }>(`select count(*)::text as rows, sum(length(t::text)) as bytes from public."${table.replaceAll('"', '""')}" t`);
        return Number(counted[0]!.rows);
      });
      rows += read;
    } catch (error) {
      return {
        name: 'pages',
        status: 'fail',
        detail: `${table} cannot be read: ${(error as Error).message}. Keep the data folder as it is (copy it before anything else) and restore ${table} from a backup; roster audit verify says which memory chains are intact.`,
      };
    }
  }
  return { name: 'pages', status: 'ok', detail: `read every row of ${tables.length} tables (${rows.toLocaleString('en')} rows)` };
}

/**
 * The role model: the connecting role owns the schema and must be able to
 * switch to roster_app (scoped turns) and roster_ops (jobs and the owner's
 * tools), holding roster_ops's policies itself; none may bypass row-level
 * security. What is missing is named with the SQL an administrator runs.
 */
async function rolesCheck(database: Database): Promise<Check> {
  const state = await database.ownerScope('doctor: read the roles', async (tx) => {
    const { rows } = await tx.query<{ version: number; owner: string; superuser: boolean; app: boolean; ops: boolean; app_set: boolean; ops_set: boolean; ops_usage: boolean; bypass: string[] }>(
      `select current_setting('server_version_num')::int as version, current_user as owner,
              (select rolsuper from pg_roles where rolname = current_user) as superuser,
              exists (select 1 from pg_roles where rolname = 'roster_app') as app,
              exists (select 1 from pg_roles where rolname = 'roster_ops') as ops,
              coalesce((select pg_has_role(current_user, 'roster_app', 'member') from pg_roles where rolname = 'roster_app'), false) as app_set,
              coalesce((select pg_has_role(current_user, 'roster_ops', 'member') from pg_roles where rolname = 'roster_ops'), false) as ops_set,
              coalesce((select pg_has_role(current_user, 'roster_ops', 'usage') from pg_roles where rolname = 'roster_ops'), false) as ops_usage,
              array(select rolname::text from pg_roles where rolname in ('roster_app', 'roster_ops') and (rolsuper or rolbypassrls)) as bypass`,
    );
    return rows[0]!;
  });
  if (!state.app || !state.ops) {
    return { name: 'roles', status: 'fail', detail: 'roster_app or roster_ops is missing: run roster migrate as the owner of the database' };
  }
  if (state.bypass.length > 0) {
    return { name: 'roles', status: 'fail', detail: `${state.bypass.join(', ')} can bypass row-level security: ALTER ROLE ${state.bypass[0]} NOSUPERUSER NOBYPASSRLS` };
  }
  if (!state.superuser && (!state.app_set || !state.ops_set || !state.ops_usage)) {
    return {
      name: 'roles',
      status: 'fail',
      // Postgres 16 split membership into INHERIT and SET options; before it, a plain GRANT gives both.
      detail: `${state.owner} cannot switch to the runtime roles: ${
        state.version >= 160000
          ? `GRANT roster_app TO ${state.owner} WITH SET TRUE; GRANT roster_ops TO ${state.owner} WITH INHERIT TRUE, SET TRUE`
          : `GRANT roster_app, roster_ops TO ${state.owner}; ALTER ROLE ${state.owner} INHERIT`
      }`,
    };
  }
  return { name: 'roles', status: 'ok', detail: `owner ${state.owner}${state.superuser ? ' (a superuser: row-level security is not tried on it)' : ''}; roster_app and roster_ops` };
}

/**
 * Who judges the mirror's replays: ROSTER_JUDGE_ENGINE, or else each agent's
 * own engine. The offline engine cannot judge, so with it and no judge the
 * mirror replays nothing: said here, as "off", rather than as a failed run
 * every night.
 */
async function judgeCheck(config: Config): Promise<Check> {
  if (config.ROSTER_JUDGE_ENGINE !== undefined) {
    const check = await modelCheck('judge', config.ROSTER_JUDGE_ENGINE, config);
    return config.ROSTER_JUDGE_ENGINE.startsWith('offline') ? { name: 'judge', status: 'fail', detail: `ROSTER_JUDGE_ENGINE=offline cannot judge: ${noJudgeNotice.split(': ').slice(1).join(': ')}` } : check;
  }
  if (config.ROSTER_ENGINE.startsWith('offline')) return { name: 'judge', status: 'off', detail: `${noJudgeNotice} (an agent on a language model judges its own)` };
  return { name: 'judge', status: 'ok', detail: `each agent's own engine (ROSTER_JUDGE_ENGINE unset)` };
}

/** An engine or embedder reference, checked for what it needs: a key, or a server that answers. */
async function modelCheck(name: string, reference: string, config: Config): Promise<Check> {
  return { name, ...(await checkModelReference(reference, config)) };
}
