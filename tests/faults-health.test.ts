import { afterEach, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from './support/api-server.js';

let server: ApiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('/healthz', () => {
  it('reports a database that answers reads but cannot write as unhealthy, and healthy again once it can', async () => {
    server = await startApiServer();
    const database = server.test.database;
    const healthy = await server.request('GET', '/healthz');
    expect(healthy.statusCode).toBe(200);
    expect(healthy.json()).toMatchObject({ ok: true, writes: 'ok', redis: 'ok' });

    // The embedded database is one session: from here on every transaction is read-only, as on a server that lost its disk.
    await database.adminScope('test: make the database read-only', (tx) => tx.query('set default_transaction_read_only = on'));
    expect((await database.adminScope('test: still reads', (tx) => tx.query<{ n: number }>('select 1 as n'))).rows).toEqual([{ n: 1 }]);
    const readOnly = await server.request('GET', '/healthz');
    expect(readOnly.statusCode).toBe(503);
    const health = readOnly.json() as { ok: boolean; writes: string; pgvector: string | null };
    expect(health.ok).toBe(false);
    expect(health.writes).toMatch(/^cannot write: .*read-only transaction/);
    // Reads still work: the database is there, with its extension.
    expect(health.pgvector).toMatch(/^0\./);

    await database.adminScope('test: writable again', (tx) => tx.query('set default_transaction_read_only = off'));
    const back = await server.request('GET', '/healthz');
    expect(back.statusCode).toBe(200);
    expect(back.json()).toMatchObject({ ok: true, writes: 'ok' });
  });
});
