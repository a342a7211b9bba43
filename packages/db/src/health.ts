import { RosterError } from '@roster/errors';
import type { Database } from './database.js';

/**
 * Whether the database takes new writes now: `ok`, or why not in one line.
 * The probe truncates `health_probe` and writes its row again in one
 * transaction: TRUNCATE gives the table a new, empty file, so the row needs
 * a page the disk does not yet hold. Rewriting a row in place fits in a page
 * that already exists, and went through on a full disk while every turn
 * failed; this probe fails as they do. The table holds a time and nothing
 * else; the transaction takes a lock on that table alone.
 */
export async function probeWrites(database: Database): Promise<string> {
  try {
    await database.adminScope('health: write probe', async (tx) => {
      await tx.query('truncate health_probe');
      await tx.query('insert into health_probe (id, written_at) values (1, now())');
    });
    return 'ok';
  } catch (error) {
    return `cannot write: ${RosterError.isInstance(error) ? error.message : (error as Error).message}`;
  }
}
