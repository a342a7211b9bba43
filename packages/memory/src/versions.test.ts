import { testInstallationKey } from '@roster/config/testing';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultMigrationsDir, migrate, type Scope } from '@roster/db';
import { openTestDatabase } from '@roster/db/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHashingEmbedder } from './embedders/index.js';
import { createMemory, type Memory } from './memory.js';
import { memoryFixture, saidBy, type MemoryFixture } from './testing/fixture.js';
import type { Fact } from './types.js';

let f: MemoryFixture;
let memory: Memory;
beforeEach(async () => {
  f = await memoryFixture();
  memory = f.memory;
});
afterEach(async () => {
  await f?.cleanup();
});

/** Real time passes between the moments a test names, so that each lies strictly between two changes. */
const pause = () => new Promise((resolve) => setTimeout(resolve, 20));
const contents = (facts: readonly Fact[]) => facts.map((fact) => fact.content);

async function counts(): Promise<{ facts: number; events: number }> {
  return f.database.adminScope('test: count facts and events', async (tx) => {
    const { rows } = await tx.query<{ facts: string; events: string }>(
      'select (select count(*) from facts) as facts, (select count(*) from memory_events) as events',
    );
    return { facts: Number(rows[0]!.facts), events: Number(rows[0]!.events) };
  });
}

/** Five moments around a change, in order; each is both a valid time and a record time in the tables below. */
type Moment = 'before' | 'remembered' | 'between' | 'changed' | 'after';
const moments: readonly Moment[] = ['before', 'remembered', 'between', 'changed', 'after'];
type Table = Record<Moment, Record<Moment, Array<string | null>>>;

/** One row of a table: what is believed at that record time, for each valid time from `before` to `after`. */
const row = (...cells: Array<Array<string | null>>): Record<Moment, Array<string | null>> =>
  Object.fromEntries(moments.map((moment, index) => [moment, cells[index]!])) as Record<Moment, Array<string | null>>;

/** asOf at every (recordedAt, validAt) pair of the moments, as a table of the same shape. */
async function believedTable(scope: Scope, at: Record<Moment, Date>): Promise<Table> {
  const table = {} as Table;
  for (const recorded of moments) {
    table[recorded] = {} as Record<Moment, Array<string | null>>;
    for (const valid of moments) table[recorded][valid] = contents(await memory.asOf(scope, { validAt: at[valid], recordedAt: at[recorded] }));
  }
  return table;
}

function expectStrictlyOrdered(at: Record<Moment, Date>): void {
  const times = moments.map((moment) => at[moment].getTime());
  expect(times, moments.join(' < ')).toEqual([...times].sort((a, b) => a - b));
  expect(new Set(times).size).toBe(moments.length);
}

describe('asOf: what was believed at each record time about each valid time', () => {
  const rome = 'Ada lives in Rome';
  const milan = 'Ada lives in Milan';
  const turin = 'Ada lives in Turin';
  const none: string[] = [];

  it('around an update, keeps what was believed before it and restates the old value as ending at it', async () => {
    const scope = f.dm('scout', 'ada');
    const ada = saidBy(f.people.ada);
    const before = new Date();
    await pause();
    const first = await memory.remember(scope, { content: rome, provenance: ada });
    await pause();
    const between = new Date();
    await pause();
    const changed = await memory.update(scope, first.fact.id, milan, ada);
    await pause();
    const at = { before, remembered: first.fact.recordedAt, between, changed: changed.fact.recordedAt, after: new Date() };
    expectStrictlyOrdered(at);

    // Rows: recordedAt. Columns: validAt, from before to after.
    const expected: Table = {
      before: row(none, none, none, none, none),
      remembered: row(none, [rome], [rome], [rome], [rome]),
      between: row(none, [rome], [rome], [rome], [rome]),
      changed: row(none, [rome], [rome], [milan], [milan]),
      after: row(none, [rome], [rome], [milan], [milan]),
    };
    expect(await believedTable(scope, at)).toEqual(expected);

    // The change closed the old belief in record time and restated it; nothing was rewritten.
    expect(changed.previous).toMatchObject({ content: rome, restates: first.fact.id, supersededBy: changed.fact.id, supersededAt: null });
    expect(changed.previous.validTo?.getTime()).toBe(changed.fact.validFrom.getTime());
    const original = (await memory.history(scope, first.fact.id)).find((entry) => entry.relation === 'this')!.fact;
    expect(original.id).toBe(changed.previous.id);
  });

  it('around a correction, shows the wrong value only to record times before it, and at no valid time after it', async () => {
    const scope = f.dm('scout', 'ada');
    const ada = saidBy(f.people.ada);
    const before = new Date();
    await pause();
    const first = await memory.remember(scope, { content: rome, provenance: ada });
    await pause();
    const between = new Date();
    await pause();
    const corrected = await memory.correct(scope, first.fact.id, turin, ada);
    await pause();
    const at = { before, remembered: first.fact.recordedAt, between, changed: corrected.fact.recordedAt, after: new Date() };
    expectStrictlyOrdered(at);

    const expected: Table = {
      before: row(none, none, none, none, none),
      remembered: row(none, [rome], [rome], [rome], [rome]),
      between: row(none, [rome], [rome], [rome], [rome]),
      changed: row(none, [turin], [turin], [turin], [turin]),
      after: row(none, [turin], [turin], [turin], [turin]),
    };
    expect(await believedTable(scope, at)).toEqual(expected);
    expect(corrected.retracted).toMatchObject({ content: rome, trust: 'retracted', supersededBy: corrected.fact.id });
    expect(corrected.retracted.supersededAt?.getTime()).toBe(corrected.fact.recordedAt.getTime());
  });

  it('around a correction of an updated value, keeps the restated old value and retracts only the new one', async () => {
    const scope = f.dm('scout', 'ada');
    const ada = saidBy(f.people.ada);
    const before = new Date();
    await pause();
    const first = await memory.remember(scope, { content: rome, provenance: ada });
    await pause();
    const changed = await memory.update(scope, first.fact.id, milan, ada);
    await pause();
    const corrected = await memory.correct(scope, changed.fact.id, turin, ada);
    await pause();
    // Here `between` is the update and `changed` the correction.
    const at = { before, remembered: first.fact.recordedAt, between: changed.fact.recordedAt, changed: corrected.fact.recordedAt, after: new Date() };
    expectStrictlyOrdered(at);

    const expected: Table = {
      before: row(none, none, none, none, none),
      remembered: row(none, [rome], [rome], [rome], [rome]),
      between: row(none, [rome], [milan], [milan], [milan]),
      changed: row(none, [rome], [turin], [turin], [turin]),
      after: row(none, [rome], [turin], [turin], [turin]),
    };
    expect(await believedTable(scope, at)).toEqual(expected);
  });
});

describe('only the current version changes', () => {
  it('refuses to correct or update a changed, restated or retracted version, naming the current one, and changes nothing', async () => {
    const scope = f.dm('scout', 'ada');
    const ada = saidBy(f.people.ada);
    const rome = await memory.remember(scope, { content: 'Ada lives in Rome', provenance: ada });
    const milan = await memory.update(scope, rome.fact.id, 'Ada lives in Milan', ada);

    const stale = [rome.fact.id, milan.previous.id];
    let before = await counts();
    for (const id of stale) {
      for (const attempt of [() => memory.correct(scope, id, 'Ada lives in Naples', ada), () => memory.update(scope, id, 'Ada lives in Naples', ada)]) {
        await expect(attempt()).rejects.toMatchObject({ code: 'fact_not_current', currentId: milan.fact.id, message: expect.stringContaining(milan.fact.id) });
      }
    }
    // A belief restated since takes no change of trust either.
    await expect(memory.dispute(scope, rome.fact.id, ada)).rejects.toMatchObject({ code: 'fact_not_current', currentId: milan.fact.id });
    expect(await counts()).toEqual(before);
    expect(contents(await memory.list(scope))).toEqual(['Ada lives in Milan']);

    // Positive control: the current version is corrected.
    const turin = await memory.correct(scope, milan.fact.id, 'Ada lives in Turin', ada);
    expect(contents(await memory.list(scope))).toEqual(['Ada lives in Turin']);

    // The retracted version, and every older one, now name the correction.
    before = await counts();
    for (const id of [...stale, milan.fact.id]) {
      await expect(memory.update(scope, id, 'Ada lives in Naples', ada)).rejects.toMatchObject({ code: 'fact_not_current', currentId: turin.fact.id });
      await expect(memory.correct(scope, id, 'Ada lives in Naples', ada)).rejects.toMatchObject({ code: 'fact_not_current', currentId: turin.fact.id });
    }
    await expect(memory.update(scope, milan.fact.id, 'x', ada)).rejects.toThrow(/it was corrected, so it is not the current version/);
    expect(await counts()).toEqual(before);

    // Positive control: the current version is updated.
    const naples = await memory.update(scope, turin.fact.id, 'Ada lives in Naples', ada);
    expect(contents(await memory.list(scope))).toEqual(['Ada lives in Naples']);
    expect((await memory.history(scope, naples.fact.id)).map((entry) => [entry.relation, entry.fact.trust, entry.fact.content])).toEqual([
      ['earlier', 'active', 'Ada lives in Rome'],
      ['earlier', 'retracted', 'Ada lives in Milan'],
      ['earlier', 'active', 'Ada lives in Turin'],
      ['this', 'active', 'Ada lives in Naples'],
    ]);
  });
});

describe('a value can change back', () => {
  it('updates Rome to Milan and back to Rome: Rome is current, history shows the three, reads show only the current one', async () => {
    const scope = f.dm('scout', 'ada');
    const ada = saidBy(f.people.ada);
    const first = await memory.remember(scope, { content: 'I live in Rome', provenance: ada });
    await pause();
    const milan = await memory.update(scope, first.fact.id, 'I live in Milan', ada);
    await pause();
    const back = await memory.update(scope, milan.fact.id, 'I live in Rome', ada);

    expect(back.fact).toMatchObject({ content: 'I live in Rome', validTo: null, supersededAt: null });
    expect(back.fact.id).not.toBe(first.fact.id);
    expect(contents(await memory.list(scope))).toEqual(['I live in Rome']);
    expect(contents(await memory.asOf(scope, {}))).toEqual(['I live in Rome']);
    expect((await memory.search(scope, 'where do I live')).map((result) => result.fact.id)).toEqual([back.fact.id]);
    expect((await memory.match(scope, 'I live in Rome')).map((match) => match.fact.id)).toEqual([back.fact.id]);
    // Only the current version's vector is searchable.
    const searchable = await f.database.adminScope('test: searchable vectors', async (tx) =>
      (await tx.query<{ fact_id: string }>('select fact_id from fact_embeddings where searchable')).rows.map((row) => row.fact_id),
    );
    expect(searchable).toEqual([back.fact.id]);

    const expectedHistory = [
      ['earlier', 'I live in Rome', true],
      ['earlier', 'I live in Milan', true],
      ['this', 'I live in Rome', false],
    ];
    const shown = (entries: Awaited<ReturnType<Memory['history']>>) => entries.map((entry) => [entry.relation, entry.fact.content, entry.fact.validTo !== null]);
    expect(shown(await memory.history(scope, back.fact.id))).toEqual(expectedHistory);
    // Asked about the first id, the same three versions, the first as `this`.
    expect(shown(await memory.history(scope, first.fact.id))).toEqual([
      ['this', 'I live in Rome', true],
      ['later', 'I live in Milan', true],
      ['later', 'I live in Rome', false],
    ]);

    // A plain duplicate still dedupes, onto the current version.
    const again = await memory.remember(scope, { content: 'i live in ROME.', provenance: ada });
    expect(again).toMatchObject({ created: false, fact: { id: back.fact.id } });
  });

  it('remembers again words that held only until a change when a person says them, and never stores twice words believed now', async () => {
    const scope = f.dm('scout', 'ada');
    const ada = saidBy(f.people.ada);
    const rome = await memory.remember(scope, { content: 'I live in Rome', provenance: ada });
    await memory.update(scope, rome.fact.id, 'I live in Milan', ada);
    // Negative control: what is believed now is not stored twice.
    expect(await memory.remember(scope, { content: 'I live in Milan', provenance: ada })).toMatchObject({ created: false });
    // "I live in Rome" held only until the change. A job re-reading old messages does not revive it…
    const extracted = await memory.remember(scope, { content: 'I live in Rome', provenance: { actor: { kind: 'job', id: 'extract' } } });
    expect(extracted).toMatchObject({ created: false, fact: { restates: rome.fact.id, content: 'I live in Rome' } });
    expect(contents(await memory.list(scope))).toEqual(['I live in Milan']);
    // …while the person saying it again is remembered again.
    const said = await memory.remember(scope, { content: 'I live in Rome', provenance: ada });
    expect(said.created).toBe(true);
    expect(contents(await memory.list(scope)).sort()).toEqual(['I live in Milan', 'I live in Rome']);
  });
});

describe('forget reaches restated beliefs', () => {
  it('forgets every row of a chain that changed back and forth, at every record time', async () => {
    const scope = f.dm('scout', 'ada');
    const ada = saidBy(f.people.ada);
    const first = await memory.remember(scope, { content: 'I live in Rome', provenance: ada });
    await pause();
    const beforeChanges = new Date();
    await pause();
    const milan = await memory.update(scope, first.fact.id, 'I live in Milan', ada);
    await pause();
    const back = await memory.update(scope, milan.fact.id, 'I live in Rome', ada);
    const rows = async () =>
      f.database.adminScope('test: the chain as stored', async (tx) =>
        (await tx.query<{ content: string; trust: string; restates: string | null }>('select content, trust, restates from facts order by recorded_at, content')).rows,
      );
    // Positive control: five rows — two beliefs, two restatements, the value now.
    const stored = await rows();
    expect(stored).toHaveLength(5);
    expect(stored.filter((row) => row.restates !== null)).toHaveLength(2);
    expect(contents(await memory.asOf(scope, { validAt: beforeChanges, recordedAt: beforeChanges }))).toEqual(['I live in Rome']);

    await memory.forget(scope, back.fact.id, ada);

    expect((await rows()).map((row) => [row.content, row.trust])).toEqual(Array.from({ length: 5 }, () => ['', 'forgotten']));
    for (const recordedAt of [beforeChanges, milan.fact.recordedAt, new Date()]) {
      expect(await memory.asOf(scope, { validAt: beforeChanges, recordedAt })).toEqual([]);
      expect(await memory.asOf(scope, { validAt: recordedAt, recordedAt })).toEqual([]);
    }
    expect(await memory.list(scope)).toEqual([]);
    expect((await memory.history(scope, first.fact.id)).map((entry) => [entry.fact.trust, entry.fact.content])).toEqual([
      ['forgotten', null],
      ['forgotten', null],
      ['forgotten', null],
    ]);
  });
});

describe('migration 0011', () => {
  it('rebuilds a change recorded before it into the belief held until the change and its restatement', async () => {
    // A database as it was at migration 0010, holding a change made then: the old row's validity closed in place.
    const test = await openTestDatabase({ migrate: false });
    const earlier = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-migrations-'));
    try {
      for (const name of fs.readdirSync(defaultMigrationsDir)) {
        if (/^00(0\d|10)_/.test(name)) fs.copyFileSync(path.join(defaultMigrationsDir, name), path.join(earlier, name));
      }
      expect((await migrate(test.database, { dir: earlier })).version).toBe(10);
      const ids = await test.database.adminScope('test: a change recorded before migration 0011', async (tx) => {
        const agent = (await tx.query<{ id: string }>(`insert into agents (name, job) values ('Scout', 'finds things') returning id`)).rows[0]!.id;
        const person = (await tx.query<{ id: string }>(`insert into people (name, role) values ('Ada', 'owner') returning id`)).rows[0]!.id;
        const insert = `insert into facts (agent_id, person_id, content, content_hash, valid_from, valid_to, recorded_at)
                        values ($1, $2, $3, $4, $5, $6, $7) returning id`;
        const milan = (await tx.query<{ id: string }>(insert, [agent, person, 'Ada lives in Milan', 'h-milan', '2026-03-01T00:00:00Z', null, '2026-03-01T00:00:00Z'])).rows[0]!.id;
        const rome = (await tx.query<{ id: string }>(insert, [agent, person, 'Ada lives in Rome', 'h-rome', '2026-01-01T00:00:00Z', '2026-03-01T00:00:00Z', '2026-01-01T00:00:00Z'])).rows[0]!.id;
        await tx.query('update facts set superseded_by = $2 where id = $1', [rome, milan]);
        return { agent, person, rome, milan };
      });

      const report = await migrate(test.database);
      expect(report.applied.map((migration) => migration.version)).toContain(11);

      const memory = createMemory({ database: test.database, embedder: createHashingEmbedder(), key: testInstallationKey });
      const scope: Scope = { agentId: ids.agent, personId: ids.person, audience: 'private' };
      const at = (time: string) => new Date(time);
      const believed = async (validAt: string, recordedAt: string) => contents(await memory.asOf(scope, { validAt: at(validAt), recordedAt: at(recordedAt) }));
      // Before the change was recorded, Rome was believed to hold for good: the row no longer says otherwise.
      expect(await believed('2026-04-01T00:00:00Z', '2026-02-01T00:00:00Z')).toEqual(['Ada lives in Rome']);
      expect(await believed('2026-02-01T00:00:00Z', '2026-02-01T00:00:00Z')).toEqual(['Ada lives in Rome']);
      // From the change on, Rome held until it, Milan since.
      expect(await believed('2026-02-01T00:00:00Z', '2026-04-01T00:00:00Z')).toEqual(['Ada lives in Rome']);
      expect(await believed('2026-04-01T00:00:00Z', '2026-04-01T00:00:00Z')).toEqual(['Ada lives in Milan']);
      expect(await believed('2026-04-01T00:00:00Z', '2026-03-01T00:00:00Z')).toEqual(['Ada lives in Milan']);
      expect(contents(await memory.list(scope))).toEqual(['Ada lives in Milan']);
      expect((await memory.history(scope, ids.rome)).map((entry) => [entry.relation, entry.fact.content, entry.fact.validTo?.toISOString() ?? null])).toEqual([
        ['this', 'Ada lives in Rome', '2026-03-01T00:00:00.000Z'],
        ['later', 'Ada lives in Milan', null],
      ]);
      // The old row is not current: the change goes to Milan.
      const ada = { actor: { kind: 'person' as const, id: ids.person } };
      await expect(memory.update(scope, ids.rome, 'Ada lives in Turin', ada)).rejects.toMatchObject({ code: 'fact_not_current', currentId: ids.milan });
      await expect(memory.update(scope, ids.milan, 'Ada lives in Turin', ada)).resolves.toMatchObject({ fact: { content: 'Ada lives in Turin' } });
    } finally {
      fs.rmSync(earlier, { recursive: true, force: true });
      await test.cleanup();
    }
  });
});
