import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { migrate, openServerDatabase } from '@roster/db';
import { createTestServerDatabase } from '@roster/db/testing';
import { createRuntime } from '@roster/runtime';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from '../support/fake-openai.js';
import { requireServerUrl } from '../support/installation.js';

/**
 * A reply's transaction locks its agent's audit chain first, and every other
 * writer of memory locks a fact before the chain: so the uses a reply counts
 * must never wait for a fact another transaction holds, or the two could
 * wait for each other. On the embedded database one session runs one
 * transaction at a time, so only a server can hold a row while a turn runs.
 * Run by `npm run test:server` (TEST_DATABASE_URL).
 */
const adminUrl = requireServerUrl();

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

describe('a turn’s uses beside a transaction that holds a fact', () => {
  it('stores the reply without waiting, counts the fact no one holds and not the one held', async () => {
    const fake = await startFakeOpenAi((request) => (request.toolResults.length === 0 ? { tool: 'recall', input: { query: 'locker' } } : { text: 'done' }));
    cleanups.push(() => fake.close());
    const created = await createTestServerDatabase(adminUrl);
    cleanups.push(() => created.drop());
    const database = await openServerDatabase(created.url);
    cleanups.push(() => database.close());
    await migrate(database);
    const roster = await createRuntime({ config: parseConfig({}), database, key: testInstallationKey });
    const scout = await roster.core.directory.addAgent({ name: 'Scout', job: 'finds things', engine: fake.engine });
    const ada = await roster.core.directory.addPerson({ name: 'Ada' });
    const scope = { agentId: scout.id, personId: ada.id, audience: 'private' as const };
    const said = { actor: { kind: 'person' as const, id: ada.id } };
    const number = (await roster.memory.remember(scope, { content: 'my locker number is 4418', provenance: said })).fact;
    const place = (await roster.memory.remember(scope, { content: 'my locker is in the north gym', provenance: said })).fact;
    const ask = () => roster.core.handle({ channel: 'cli', conversation: { externalId: 'ada-dm', kind: 'dm' }, sender: { personId: ada.id }, text: 'where is my locker?' });
    const read = async () => {
      const { rows } = await database.adminScope('test: read uses and use events', async (tx) =>
        tx.query<{ id: string; uses: number; events: string }>(
          `select f.id, f.uses, (select count(*) from memory_events e where e.action = 'use' and e.target_id = f.id::text) as events from facts f where f.id = any($1)`,
          [[number.id, place.id]],
        ),
      );
      const of = (id: string) => rows.find((row) => row.id === id)!;
      return { number: [of(number.id).uses, Number(of(number.id).events)], place: [of(place.id).uses, Number(of(place.id).events)] };
    };

    // Nothing held (the control): both facts used, each with its event.
    await ask();
    expect(await read()).toEqual({ number: [1, 1], place: [1, 1] });

    // Another transaction holds one fact's row for the whole turn, as a forget or a correction does before it appends to the chain.
    const other = new pg.Client({ connectionString: created.url });
    await other.connect();
    cleanups.push(() => other.end());
    await other.query('begin');
    await other.query('select 1 from facts where id = $1 for update', [place.id]);
    const reply = await ask();
    expect(reply.replies[0]?.text).toBe('done');
    await other.query('commit');
    expect(await read()).toEqual({ number: [2, 2], place: [1, 1] });
    expect(await roster.memory.audit.verify()).toEqual([expect.objectContaining({ agentId: scout.id, ok: true })]);
  });
});
