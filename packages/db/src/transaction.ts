import { RosterError } from '@roster/errors';
import type pg from 'pg';

/**
 * What Postgres answers for text it cannot store: U+0000 in text (22021) or
 * in JSON (22P05). The input is at fault, not the database: a refusal with
 * a code, not a failure of the server.
 */
const unstorableText = new Set(['22021', '22P05']);

/** Run `fn` between BEGIN and COMMIT on one pooled client; ROLLBACK on any error. */
export async function transaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('begin');
    try {
      const result = await fn(client);
      await client.query('commit');
      return result;
    } catch (error) {
      try {
        await client.query('rollback');
      } catch {
        broken = true;
      }
      if (unstorableText.has((error as { code?: unknown }).code as string)) {
        throw new RosterError('text_invalid', 'Text may not contain the NUL character (U+0000); remove it and try again.', { cause: error });
      }
      throw error;
    }
  } finally {
    client.release(broken);
  }
}
