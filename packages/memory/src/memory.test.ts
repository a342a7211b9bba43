import type { Scope } from '@roster/db';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Memory } from './memory.js';
import { memoryFixture, saidBy, type MemoryFixture } from './testing/fixture.js';
import type { Fact, Provenance } from './types.js';

let f: MemoryFixture;
let memory: Memory;
beforeEach(async () => {
  f = await memoryFixture();
  memory = f.memory;
});
afterEach(async () => {
  await f?.cleanup();
});

async function eventCount(): Promise<number> {
  return f.database.adminScope('test: count events', async (tx) => Number((await tx.query<{ n: string }>('select count(*) as n from memory_events')).rows[0]!.n));
}

async function factCount(): Promise<number> {
  return f.database.adminScope('test: count facts', async (tx) => Number((await tx.query<{ n: string }>('select count(*) as n from facts')).rows[0]!.n));
}

/** Every read function's view of one scope, as contents. */
async function everyRead(scope: Scope, query: string, factIds: string[]) {
  const search = (await memory.search(scope, query)).map((result) => result.fact.content);
  const list = (await memory.list(scope)).map((fact) => fact.content);
  const asOf = (await memory.asOf(scope, {})).map((fact) => fact.content);
  const history: Array<string | null> = [];
  const byId: Array<string | null> = [];
  for (const id of factIds) {
    try {
      history.push(...(await memory.history(scope, id)).map((entry) => entry.fact.content));
    } catch {
      // not in this scope
    }
    try {
      byId.push((await memory.get(scope, id)).content);
    } catch {
      // not readable here
    }
  }
  const exported = [await memory.export(scope, 'json'), await memory.export(scope, 'markdown')].join('\n');
  return { search, list, asOf, history, byId, exported };
}

describe('isolation matrix', () => {
  it('shows each fact to exactly its scopes, through every read function', async () => {
    const agents = ['scout', 'coder'] as const;
    const people = ['ada', 'bob'] as const;
    const written: Array<{ agent: (typeof agents)[number]; person: (typeof people)[number]; audience: 'private' | 'agent'; content: string; id: string }> = [];
    for (const agent of agents) {
      for (const person of people) {
        for (const audience of ['private', 'agent'] as const) {
          const content = `zebra marker ${agent} ${person} ${audience}`;
          const { fact } = await memory.remember(f.dm(agent, person), { content, audience, provenance: saidBy(f.people[person]) });
          written.push({ agent, person, audience, content, id: fact.id });
        }
      }
    }
    const ids = written.map((w) => w.id);
    for (const agent of agents) {
      for (const person of people) {
        for (const kind of ['dm', 'group'] as const) {
          const scope = kind === 'dm' ? f.dm(agent, person) : f.group(agent, person);
          const reads = await everyRead(scope, 'zebra marker', ids);
          for (const w of written) {
            const shouldSee = w.agent === agent && (w.audience === 'agent' || (w.person === person && kind === 'dm'));
            const where = `${w.content} read by ${agent}/${person}/${kind}`;
            expect(reads.search.includes(w.content), `search: ${where}`).toBe(shouldSee);
            expect(reads.list.includes(w.content), `list: ${where}`).toBe(shouldSee);
            expect(reads.asOf.includes(w.content), `asOf: ${where}`).toBe(shouldSee);
            expect(reads.history.includes(w.content), `history: ${where}`).toBe(shouldSee);
            expect(reads.byId.includes(w.content), `get: ${where}`).toBe(shouldSee);
            expect(reads.exported.includes(w.content), `export: ${where}`).toBe(shouldSee);
          }
        }
      }
    }
  });

  it("refuses a fact id from another scope with a typed error and changes nothing", async () => {
    const { fact } = await memory.remember(f.dm('scout', 'ada'), { content: 'Ada likes green tea', provenance: saidBy(f.people.ada) });
    const before = [await factCount(), await eventCount()];
    const elsewhere = f.dm('coder', 'ada');
    const provenance = saidBy(f.people.ada);
    await expect(memory.get(elsewhere, fact.id)).rejects.toMatchObject({ code: 'fact_not_found' });
    await expect(memory.forget(elsewhere, fact.id, provenance)).rejects.toMatchObject({ code: 'fact_not_found' });
    await expect(memory.correct(elsewhere, fact.id, 'Ada likes black tea', provenance)).rejects.toMatchObject({ code: 'fact_not_found' });
    await expect(memory.update(f.dm('scout', 'bob'), fact.id, 'x', saidBy(f.people.bob))).rejects.toMatchObject({ code: 'fact_not_found' });
    await expect(memory.confirm(elsewhere, 'not-a-uuid', provenance)).rejects.toMatchObject({ code: 'fact_not_found' });
    expect([await factCount(), await eventCount()]).toEqual(before);
    // Positive control: in its own scope the same calls work.
    expect((await memory.get(f.dm('scout', 'ada'), fact.id)).content).toBe('Ada likes green tea');
  });
});

describe('forget', () => {
  const secretWords = 'locker code 4417 at the north gym';

  async function textColumnsContaining(needle: string): Promise<string[]> {
    return f.database.adminScope('test: search every text column of every table', async (tx) => {
      const columns = await tx.query<{ table_name: string; column_name: string }>(
        `select c.table_name, c.column_name from information_schema.columns c
         join information_schema.tables t on t.table_name = c.table_name and t.table_schema = c.table_schema
         where c.table_schema = 'public' and t.table_type = 'BASE TABLE'
           and (c.data_type in ('text', 'character varying', 'json', 'jsonb', 'tsvector', 'ARRAY'))`,
      );
      const hits: string[] = [];
      for (const { table_name, column_name } of columns.rows) {
        const { rows } = await tx.query<{ n: string }>(
          // As whole words: a hash's hex digits may hold "4417" by chance, which is no copy of the words.
          `select count(*) as n from ${table_name} where lower(${column_name}::text) ~ $1`,
          [`(^|[^[:alnum:]])${needle.toLowerCase()}([^[:alnum:]]|$)`],
        );
        if (Number(rows[0]!.n) > 0) hits.push(`${table_name}.${column_name}`);
      }
      return hits;
    });
  }

  it('leaves no trace of the words anywhere, misses every read, and refuses automatic re-learning', async () => {
    const scope = f.dm('scout', 'ada');
    const conversation = await f.conversation('ada-cli');
    const said = await f.message(conversation, 'person', `remember my ${secretWords}`, { person: f.people.ada });
    const { fact } = await memory.remember(scope, { content: `My ${secretWords}`, provenance: saidBy(f.people.ada, [said], true) });
    await f.message(conversation, 'agent', `Noted: My ${secretWords}`, { agent: f.agents.scout });
    const other = await memory.remember(scope, { content: 'Ada swims on Mondays', provenance: saidBy(f.people.ada) });

    // Positive control: before forgetting, the words are found, and by every read.
    expect(await textColumnsContaining(secretWords)).toEqual(expect.arrayContaining(['facts.content', 'messages.content']));
    const before = await everyRead(scope, 'locker code north gym', [fact.id]);
    expect(before.search).toContain(`My ${secretWords}`);
    expect(before.byId).toContain(`My ${secretWords}`);
    const vectorsBefore = await f.database.adminScope('test: count vectors', async (tx) =>
      Number((await tx.query<{ n: string }>('select count(*) as n from fact_embeddings where fact_id = $1', [fact.id])).rows[0]!.n),
    );
    expect(vectorsBefore).toBe(1);

    const result = await memory.forget(scope, fact.id, saidBy(f.people.ada));
    expect(result.messagesErased).toBe(2);

    expect(await textColumnsContaining(secretWords)).toEqual([]);
    expect(await textColumnsContaining('4417')).toEqual([]);
    const vectors = await f.database.adminScope('test: count the forgotten fact\'s vectors', async (tx) =>
      Number((await tx.query<{ n: string }>('select count(*) as n from fact_embeddings where fact_id = $1', [fact.id])).rows[0]!.n),
    );
    expect(vectors).toBe(0);
    const after = await everyRead(scope, 'locker code north gym', [fact.id]);
    for (const [read, values] of Object.entries(after)) {
      expect(JSON.stringify(values), read).not.toContain('4417');
    }
    // The history shows that something existed, not what.
    const history = await memory.history(scope, fact.id);
    expect(history).toHaveLength(1);
    expect(history[0]!.fact).toMatchObject({ trust: 'forgotten', content: null });
    // Other memory is untouched.
    expect((await memory.get(scope, other.fact.id)).content).toBe('Ada swims on Mondays');

    // Automatic paths are refused: exact, reworded, from a job or the model.
    const job: Provenance = { actor: { kind: 'job', id: 'extract' }, sourceMessageIds: [said] };
    await expect(memory.remember(scope, { content: `My ${secretWords}`, provenance: job })).rejects.toMatchObject({ code: 'tombstoned' });
    await expect(memory.remember(scope, { content: 'At the north gym, my locker code 4417', provenance: job })).rejects.toMatchObject({
      code: 'tombstoned',
    });
    await expect(
      memory.remember(scope, { content: `my ${secretWords}`, provenance: { actor: { kind: 'agent', id: 'Scout' } } }),
    ).rejects.toMatchObject({ code: 'tombstoned' });
    // Said again explicitly, but quoting the forgotten message: refused.
    await expect(memory.remember(scope, { content: `My ${secretWords}`, provenance: saidBy(f.people.ada, [said], true) })).rejects.toMatchObject({
      code: 'tombstoned',
    });
    expect(await memory.isTombstoned(scope, `my ${secretWords}`)).toBe(true);
    // A different fact is not caught by the tombstone (negative control for near matching).
    await expect(memory.remember(scope, { content: 'My locker code 9921 at the south pool', provenance: job })).resolves.toMatchObject({ created: true });

    // The same person saying it again, explicitly, in a new message: admitted and audited.
    const again = await f.message(conversation, 'person', `remember my ${secretWords}`, { person: f.people.ada });
    const relearned = await memory.remember(scope, { content: `My ${secretWords}`, provenance: saidBy(f.people.ada, [again], true) });
    expect(relearned).toMatchObject({ created: true, fact: { trust: 'active', content: `My ${secretWords}` } });
    const lifts = await f.database.adminScope('test: read lift events', async (tx) =>
      (await tx.query(`select * from memory_events where action = 'tombstone-lift'`)).rows,
    );
    expect(lifts).toHaveLength(1);
    expect(await memory.isTombstoned(scope, `my ${secretWords}`)).toBe(false);
  });
});

describe('correct, update and time', () => {
  const pause = () => new Promise((resolve) => setTimeout(resolve, 25));

  it('keeps the previous value answerable and the wrong one out, at every valid and record time', async () => {
    const scope = f.dm('scout', 'ada');
    const ada = saidBy(f.people.ada);
    const t0 = new Date();
    await pause();
    const first = await memory.remember(scope, { content: 'Ada phone is 555-0101', provenance: ada });
    await pause();
    const t1 = new Date();
    await pause();
    const changed = await memory.update(scope, first.fact.id, 'Ada phone is 555-0202', ada);
    await pause();
    const t2 = new Date();
    await pause();
    const corrected = await memory.correct(scope, changed.fact.id, 'Ada phone is 555-0303', ada);
    await pause();
    const t3 = new Date();

    const contents = (facts: Fact[]) => facts.map((fact) => fact.content);
    expect(changed.previous).toMatchObject({ trust: 'active', supersededBy: changed.fact.id });
    expect(changed.previous.validTo?.getTime()).toBe(changed.fact.validFrom.getTime());
    expect(corrected.retracted).toMatchObject({ trust: 'retracted', supersededBy: corrected.fact.id });
    // A correction takes the valid time of what it corrects.
    expect(corrected.fact.validFrom.getTime()).toBe(changed.fact.validFrom.getTime());

    expect(contents(await memory.asOf(scope, { validAt: t0, recordedAt: t3 }))).toEqual([]);
    expect(contents(await memory.asOf(scope, { validAt: t1, recordedAt: t1 }))).toEqual(['Ada phone is 555-0101']);
    // "What was my previous phone?" stays answerable after both changes.
    expect(contents(await memory.asOf(scope, { validAt: t1, recordedAt: t3 }))).toEqual(['Ada phone is 555-0101']);
    // What we believed at t2 about t2 was the value later found wrong…
    expect(contents(await memory.asOf(scope, { validAt: t2, recordedAt: t2 }))).toEqual(['Ada phone is 555-0202']);
    // …and as recorded now, the corrected value holds for that same time.
    expect(contents(await memory.asOf(scope, { validAt: t2, recordedAt: t3 }))).toEqual(['Ada phone is 555-0303']);
    expect(contents(await memory.asOf(scope, { validAt: t3, recordedAt: t3 }))).toEqual(['Ada phone is 555-0303']);

    // Reads never return the retracted value; history shows it existed.
    expect(contents(await memory.list(scope))).toEqual(['Ada phone is 555-0303']);
    expect((await memory.search(scope, 'Ada phone')).map((r) => r.fact.content)).toEqual(['Ada phone is 555-0303']);
    const history = await memory.history(scope, corrected.fact.id);
    expect(history.map((entry) => [entry.relation, entry.fact.trust, entry.fact.content])).toEqual([
      ['earlier', 'active', 'Ada phone is 555-0101'],
      ['earlier', 'retracted', 'Ada phone is 555-0202'],
      ['this', 'active', 'Ada phone is 555-0303'],
    ]);
  });
});
