import { defaultIdleInTransactionMs, embeddedDataDir, serveEmbeddedDatabase } from '@roster/db';
import { makePrivateFolder, redactUrl } from '@roster/config';
import { RosterError } from '@roster/errors';
import type { CommandIo } from '../io.js';
import { exitCode } from '../io.js';
import { parseCommand, parseInteger } from '../parse.js';
import { loadConfig } from '../runtime.js';

export const defaultServePort = 5433;

export async function runDbServe(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseCommand(args, { port: { type: 'string', short: 'p' }, 'idle-in-transaction-timeout': { type: 'string' } });
  const port = parseInteger(values.port as string | undefined, '--port', 1, 65_535) ?? defaultServePort;
  // Seconds a client may sit idle inside a transaction before it is rolled back and let go (0: never).
  const idleSeconds = parseInteger(values['idle-in-transaction-timeout'] as string | undefined, '--idle-in-transaction-timeout', 0, 86_400) ?? defaultIdleInTransactionMs / 1000;
  const { config, logger } = loadConfig(io);
  if (config.DATABASE_URL !== undefined) {
    throw new RosterError('not_embedded', 'DATABASE_URL is set, so there is no embedded database to serve: connect to that server directly.');
  }
  makePrivateFolder(config.ROSTER_DATA_DIR);
  const served = await serveEmbeddedDatabase({ dataDir: embeddedDataDir(config.ROSTER_DATA_DIR), port, idleInTransactionMs: idleSeconds * 1000 });
  // The connection string holds this run's password: printed once, on stdout, for its owner to pass on.
  io.out(served.connectionString);
  io.err(`Serving the embedded database on ${redactUrl(served.connectionString)} (one connection at a time; the password is in the line above, new on every run). Press Ctrl+C to stop.`);
  const signal = await io.stopSignal;
  logger.info({ signal }, 'stopping the database server');
  await served.stop();
  return exitCode.ok;
}
