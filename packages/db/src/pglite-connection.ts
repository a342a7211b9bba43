import type { PGlite } from '@electric-sql/pglite';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import pg from 'pg';

/**
 * A node-postgres pool over a PGlite instance in this process. Each client
 * gets a fresh in-process connection, so a client the pool discards after an
 * error is replaced cleanly. PGlite is one session: the pool holds one client.
 */
export function pglitePool(pglite: PGlite): pg.Pool {
  class PgliteClient extends pg.Client {
    constructor(config?: string | pg.ClientConfig) {
      const { connection, user, password, database, host, port } = createPgConfig(pglite);
      super({ ...(typeof config === 'object' ? config : {}), user, password, database, host, port, ...({ connection } as object) });
    }
  }
  return new pg.Pool({ Client: PgliteClient, max: 1 });
}
