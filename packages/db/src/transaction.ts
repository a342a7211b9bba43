import { RosterError } from '@roster/errors';
import type pg from 'pg';

/**
 * What Postgres answers for text it cannot store: U+0000 in text (22021) or
 * in JSON (22P05). The input is at fault, not the database: a refusal with
 * a code, not a failure of the server.
 */
const unstorableText = new Set(['22021', '22P05']);

/** What Postgres answers when a file it writes cannot grow (SQLSTATE 53100), or the words of an ENOSPC from below it. */
function isDiskFull(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === '53100' || code === 'ENOSPC' || (typeof message === 'string' && /no space left on device/i.test(message));
}

/**
 * Whether a failure is the connection to the database breaking (its server
 * or the embedded database's host stopped, the socket closed), rather than a
 * statement the database refused. What was committed before it is kept, what
 * was not is rolled back, and a new connection may well succeed.
 */
export function isConnectionLost(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNREFUSED') return true;
  return typeof message === 'string' && /Connection terminated|is not queryable|connection error/i.test(message);
}

/** The first row of the last statement a query string ran (several statements sent in one round trip answer with a list). */
export function lastRow(result: unknown): Record<string, unknown> | undefined {
  const results = result as pg.QueryResult | pg.QueryResult[];
  return (Array.isArray(results) ? results.at(-1) : results)?.rows[0];
}

/**
 * Run `fn` between BEGIN and COMMIT on one pooled client; ROLLBACK on any
 * error. `opening` (statements without parameters, such as the role and the
 * scope's settings) is sent with BEGIN in one round trip: every scope pays
 * for them, and each round trip to the embedded database costs about as much
 * as a small statement. `fn` gets the opening's row.
 */
export async function transaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient, opened?: Record<string, unknown>) => Promise<T>, opening?: string): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    try {
      const begun = await client.query(opening === undefined ? 'begin' : `begin; ${opening}`);
      // The opening's row, for what it read besides setting the scope.
      const result = await fn(client, opening === undefined ? undefined : lastRow(begun));
      await client.query('commit');
      return result;
    } catch (error) {
      // A failed opening leaves the transaction open and aborted: it is rolled back like any other.
      try {
        await client.query('rollback');
      } catch {
        broken = true;
      }
      if (unstorableText.has((error as { code?: unknown }).code as string)) {
        throw new RosterError('text_invalid', 'Text may not contain the NUL character (U+0000); remove it and try again.', { cause: error });
      }
      if (isDiskFull(error)) {
        // Rolled back whole: nothing of this transaction was kept, and everything committed before it is still there.
        throw new RosterError('disk_full', 'The disk that holds the database is full: free some space on it, then try again. Nothing stored before is lost.', { cause: error, retryable: true });
      }
      throw error;
    }
  } finally {
    client.release(broken);
  }
}
