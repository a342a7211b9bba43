import type { InstallationKey } from '@roster/config';
import type { Database } from '@roster/db';
import { RosterError } from '@roster/errors';

/**
 * Record which key this database is keyed with (its fingerprint, on first
 * use), or refuse a different one. Tombstones and audit links made with one
 * key mean nothing under another: a process with the wrong key would let
 * forgotten texts through and see every link broken, so it stops instead.
 */
export async function bindInstallationKey(database: Database, key: InstallationKey): Promise<void> {
  const fingerprint = key.fingerprint;
  const bound = await database.adminScope('memory: check the installation key', async (tx) => {
    await tx.query('insert into installation_key (fingerprint) values ($1) on conflict (singleton) do nothing', [fingerprint]);
    const { rows } = await tx.query<{ fingerprint: string }>('select fingerprint from installation_key');
    return rows[0]!.fingerprint;
  });
  if (bound !== fingerprint) {
    throw new RosterError(
      'secret_key_mismatch',
      `This database is keyed with the installation key ${bound}, but this process holds ${fingerprint} (from ${key.source}): ` +
        'give it the installation’s key (ROSTER_SECRET_KEY, or the secret.key file of its data folder).',
    );
  }
}
