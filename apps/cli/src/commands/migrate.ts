import { migrate, openDatabase } from '@roster/db';
import type { CommandIo } from '../io.js';
import { exitCode } from '../io.js';
import { parseCommand } from '../parse.js';
import { loadConfig } from '../runtime.js';

export async function runMigrate(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseCommand(args, { json: { type: 'boolean' } });
  const { config, logger } = loadConfig(io);
  const database = await openDatabase({ config, logger });
  try {
    const report = await migrate(database);
    if (values.json === true) io.out(JSON.stringify(report));
    else if (report.applied.length === 0) io.out(`Nothing to do: the database is at version ${report.version}.`);
    else {
      for (const migration of report.applied) io.out(`Applied ${migration.name}`);
      io.out(`The database is at version ${report.version}.`);
    }
    return exitCode.ok;
  } finally {
    await database.close();
  }
}
