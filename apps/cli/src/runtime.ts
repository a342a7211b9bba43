import { createLogger, loadInstallationKey, parseConfig, type Config, type InstallationKey, type Logger } from '@roster/config';
import { channelVariables } from '@roster/channel-registry';
import { migrate, openDatabase, type Database, type MigrationReport } from '@roster/db';
import type { CommandIo } from './io.js';
import { prettyLogs, terminalDestination } from './log-format.js';

/** What every long-running command starts from: the config, a logger and the migrated database. */
export interface Runtime {
  config: Config;
  logger: Logger;
  database: Database;
  migration: MigrationReport;
}

export function loadConfig(io: CommandIo): { config: Config; logger: Logger } {
  // Roster's variables and every registered channel's, parsed once.
  const config = parseConfig(io.env, channelVariables);
  // Short lines for a person at a terminal; JSON for a file or a collector, or when LOG_FORMAT=json.
  const pretty = prettyLogs(config.LOG_FORMAT, process.stderr.isTTY === true);
  return { config, logger: pretty ? createLogger(config, terminalDestination()) : createLogger(config) };
}

/**
 * The same, with the installation key, for commands that touch memory or
 * its audit log. A missing or malformed key stops the command, in one line.
 */
export async function openKeyedRuntime(io: CommandIo): Promise<Runtime & { key: InstallationKey }> {
  const runtime = await openDatabaseOf(loadConfig(io));
  try {
    return { ...runtime, key: loadInstallationKey(runtime.config) };
  } catch (error) {
    await runtime.database.close();
    throw error;
  }
}

async function openDatabaseOf({ config, logger }: { config: Config; logger: Logger }): Promise<Runtime> {
  const database = await openDatabase({ config, logger });
  try {
    const migration = await migrate(database);
    if (migration.applied.length > 0) {
      logger.info({ applied: migration.applied.map((m) => m.name), version: migration.version }, 'migrations applied');
    }
    return { config, logger, database, migration };
  } catch (error) {
    await database.close();
    throw error;
  }
}

/** How long one cleanup step may take before the next one starts anyway (a part waiting on a Redis that is away). */
const stepWithinMs = 3_000;

/**
 * A cleanup step; `withinMs` gives it longer than the usual 3 s (the
 * gateway finishing the messages it has taken: the platform considers them
 * delivered, so a message cut off there would be lost).
 */
export type StopStep = (() => Promise<void>) & { withinMs?: number };

/** Run cleanup steps in reverse order of start, each even when an earlier one fails or hangs. */
export async function stopAll(steps: StopStep[], logger: Logger): Promise<void> {
  for (const step of steps.reverse()) {
    let timer: NodeJS.Timeout | undefined;
    const withinMs = step.withinMs ?? stepWithinMs;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), withinMs);
    });
    try {
      if ((await Promise.race([step(), late])) === 'late') logger.warn({ waitedMs: withinMs }, 'a part did not stop in time; going on');
    } catch (error) {
      logger.warn({ err: error }, 'a part did not stop cleanly');
    } finally {
      clearTimeout(timer);
    }
  }
}
