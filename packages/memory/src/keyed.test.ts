import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import { InstallationKey } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { defaultMigrationsDir, migrate } from '@roster/db';
import { openTestDatabase } from '@roster/db/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAuditLog } from './audit.js';
import { createHashingEmbedder } from './embedders/index.js';
import { fade } from './fade.js';
import { createMemory, type Memory } from './memory.js';
import { memoryFixture, saidBy, type MemoryFixture } from './testing/fixture.js';
import { contentHash, isNearDuplicate, keyedContentHash, keyedMinhash, minhash, normalizeText, shingles } from './text.js';

let f: MemoryFixture;
let memory: Memory;
beforeEach(async () => {
  f = await memoryFixture();
  memory = f.memory;
});
afterEach(async () => {
  await f?.cleanup();
});

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const otherKey = new InstallationKey(Buffer.alloc(32, 7), 'another installation');

/** Every row of the tables a forget leaves something in, as one text. */
async function leftovers(): Promise<string> {
  return f.database.adminScope('test: read what memory keeps', async (tx) => {
    const tables = ['facts', 'tombstones', 'memory_events', 'fact_embeddings', 'outbox'];
    const dump: unknown[] = [];
    for (const table of tables) dump.push((await tx.query(`select * from ${table}`)).rows);
    return JSON.stringify(dump);
  });
}

describe('a tombstone keeps nothing a dictionary of guesses can invert', () => {
  it('holds no unkeyed hash of the words; guessing 0000–9999 finds the number with the key and nothing without', async () => {
    const scope = f.dm('scout', 'ada');
    // Said as a code, it never reaches memory: redaction takes it at the door.
    const code = await memory.remember(scope, { content: 'my locker code is 4417', provenance: saidBy(f.people.ada) });
    expect(code.fact.content).toBe('my locker code is [redacted:access-code]');
    // Said as a number, it is kept, then forgotten: the tombstone is what a dictionary would attack.
    const text = 'my locker number is 4417';
    const { fact } = await memory.remember(scope, { content: text, provenance: saidBy(f.people.ada) });

    // Every normalisation of the text someone might hash, and the words alone.
    const forms = new Set([
      text,
      text.toLowerCase(),
      text.toUpperCase(),
      text.normalize('NFKC'),
      normalizeText(text),
      shingles(text).join(' '),
      '4417',
      'locker number 4417',
      'My locker number is 4417',
    ]);
    const hashes = [...forms].map(sha256);
    // Positive control: while the fact lives, its row holds the unkeyed hash of its normal form, and the scan sees it.
    const before = await leftovers();
    expect(hashes.some((hash) => before.includes(hash))).toBe(true);
    // The number as a word of its own: inside an id, a hash, a vector's float or a MinHash value, its digits turn up by chance.
    const asWord = /(?<![0-9A-Za-z.-])4417(?![0-9A-Za-z.-])/;
    expect(before).toMatch(asWord);

    await memory.forget(scope, fact.id, saidBy(f.people.ada));
    const after = await leftovers();
    for (const hash of hashes) expect(after).not.toContain(hash);
    expect(after).not.toMatch(asWord);

    const tombstone = await f.database.withScope(scope, async (tx) =>
      (await tx.query<{ content_hash: string; minhash: string[]; hash_kind: string }>('select content_hash, minhash, hash_kind from tombstones')).rows[0]!,
    );
    expect(tombstone.hash_kind).toBe('hmac-sha256');
    const signature = tombstone.minhash.map(Number);
    const found = { unkeyed: [] as string[], keyed: [] as string[], otherKey: [] as string[] };
    for (let code = 0; code <= 9999; code += 1) {
      const digits = String(code).padStart(4, '0');
      const guess = `my locker number is ${digits}`;
      if (contentHash(guess) === tombstone.content_hash || isNearDuplicate(minhash(guess), signature)) found.unkeyed.push(digits);
      if (keyedContentHash(otherKey, guess) === tombstone.content_hash || isNearDuplicate(keyedMinhash(otherKey, guess), signature)) found.otherKey.push(digits);
      if (keyedContentHash(testInstallationKey, guess) === tombstone.content_hash && isNearDuplicate(keyedMinhash(testInstallationKey, guess), signature)) {
        found.keyed.push(digits);
      }
    }
    expect(found).toEqual({ unkeyed: [], keyed: ['4417'], otherKey: [] });

    // Matching still works with the keyed values: exact, reworded, and not a different code.
    const job = { actor: { kind: 'job' as const, id: 'extract' } };
    expect(await memory.isTombstoned(scope, 'My LOCKER number is 4417!')).toBe(true);
    await expect(memory.remember(scope, { content: 'The locker number: 4417', provenance: job })).rejects.toMatchObject({ code: 'tombstoned' });
    expect(await memory.isTombstoned(scope, 'my locker number is 4418')).toBe(false);
  });

  it('still refuses the text of a tombstone made before keying, compared the old way, and only that text', async () => {
    const scope = f.dm('scout', 'ada');
    const forgotten = 'Ada keeps the spare key under the blue pot';
    await f.database.adminScope('test: a tombstone from before keying', (tx) =>
      tx.query(`insert into tombstones (agent_id, person_id, content_hash, minhash, hash_kind) values ($1, $2, $3, $4, 'sha256')`, [
        f.agents.scout,
        f.people.ada,
        contentHash(forgotten),
        minhash(forgotten),
      ]),
    );
    expect(await memory.isTombstoned(scope, forgotten)).toBe(true);
    expect(await memory.isTombstoned(scope, 'the spare key: under the blue pot, Ada keeps it')).toBe(true);
    const job = { actor: { kind: 'job' as const, id: 'extract' } };
    await expect(memory.remember(scope, { content: forgotten, provenance: job })).rejects.toMatchObject({ code: 'tombstoned' });
    // Negative control: another fact passes.
    expect(await memory.isTombstoned(scope, 'Ada keeps her bike in the yard')).toBe(false);
    await expect(memory.remember(scope, { content: 'Ada keeps her bike in the yard', provenance: job })).resolves.toMatchObject({ created: true });
  });
});

describe('the installation key', () => {
  it('is bound to the database: a process with another key is refused, one with the same key is not', async () => {
    const embedder = createHashingEmbedder();
    await expect(createMemory({ database: f.database, embedder, key: testInstallationKey }).prepare()).resolves.toBeUndefined();
    await expect(createMemory({ database: f.database, embedder, key: otherKey }).prepare()).rejects.toMatchObject({
      code: 'secret_key_mismatch',
      message: expect.stringContaining(otherKey.fingerprint),
    });
  });

  it('is never shown when printed or logged', () => {
    const material = Buffer.alloc(32, 0xab);
    const key = new InstallationKey(material, 'given');
    const shown = [JSON.stringify({ key }), String(key), `${key}`, inspect(key), inspect({ nested: { key } })].join('\n');
    expect(shown).not.toContain(material.toString('hex'));
    expect(shown).not.toContain(material.toString('base64'));
    expect(shown).toContain(key.fingerprint);
  });
});

describe('the keyed audit chain', () => {
  it('stays whole under concurrent appends to one agent, from memory and from a batch job', async () => {
    const ada = saidBy(f.people.ada);
    const bob = saidBy(f.people.bob);
    const facts = await Promise.all(
      Array.from({ length: 12 }, (_, index) =>
        memory.remember(index % 2 === 0 ? f.dm('scout', 'ada') : f.dm('scout', 'bob'), { content: `Scout note number ${index}`, provenance: index % 2 === 0 ? ada : bob }),
      ),
    );
    await f.database.adminScope('test: age the notes', (tx) => tx.query(`update facts set recorded_at = now() - interval '90 days' where agent_id = $1`, [f.agents.scout]));
    await Promise.all([
      fade(f.database, memory.audit, { batchSize: 3 }),
      ...facts.slice(0, 4).map(({ fact }) => memory.recordUse(fact.personId === f.people.ada ? f.dm('scout', 'ada') : f.dm('scout', 'bob'), [fact.id], 'recall', ada.actor)),
    ]);
    const [chain] = await memory.audit.verify({ agentId: f.agents.scout });
    expect(chain).toMatchObject({ ok: true, unkeyed: 0, broken: null });
    const count = await f.database.adminScope('test: count', async (tx) => Number((await tx.query<{ n: string }>('select count(*) as n from memory_events where agent_id = $1', [f.agents.scout])).rows[0]!.n));
    // Twelve remembers, and for each note one fade or one use (a used note does not fade; a faded one cannot be used).
    expect(count).toBe(24);
    expect(chain!.events).toBe(count);
  });

  it('cannot be verified, nor extended unnoticed, without the key', async () => {
    const scope = f.dm('scout', 'ada');
    for (const content of ['Ada plays chess', 'Ada reads maps', 'Ada bakes bread']) await memory.remember(scope, { content, provenance: saidBy(f.people.ada) });
    // Positive control: with the key the chain holds.
    expect((await memory.audit.verify())[0]).toMatchObject({ ok: true, events: 3 });
    // Under another key every link is wrong, from the first.
    expect((await createAuditLog({ database: f.database, key: otherKey }).verify())[0]).toMatchObject({ ok: false, broken: { seq: 1, problem: 'its content does not match its hash' } });

    // An owner who rewrites an event and recomputes its hash the only way open without the key (plain SHA-256) is caught there.
    await f.database.ownerScope('test: rewrite an event as the owner', async (tx) => {
      await tx.query('alter table memory_events disable trigger memory_events_append_only');
      await tx.query(
        `update memory_events set detail = '{"trust":"verified"}', hash_kind = 'sha256',
           hash = encode(sha256(convert_to(coalesce(prev_hash, '') || jsonb_build_object('seq', seq)::text, 'UTF8')), 'hex')
         where agent_id = $1 and seq = 2`,
        [f.agents.scout],
      );
      await tx.query('alter table memory_events enable trigger memory_events_append_only');
    });
    expect((await memory.audit.verify())[0]).toMatchObject({ ok: false, broken: { seq: 2 } });
  });

  it('shows a chain its owner rewrote the unkeyed way, by how it ends and against a head kept elsewhere', async () => {
    const scope = f.dm('scout', 'ada');
    for (const content of ['Ada plays chess', 'Ada reads maps', 'Ada bakes bread']) await memory.remember(scope, { content, provenance: saidBy(f.people.ada) });
    const [kept] = await memory.audit.heads(f.agents.scout);
    // Whoever owns the database, without the key, can still make the whole chain look like one from before keying.
    await f.database.ownerScope('test: rewrite the chain unkeyed as the owner', async (tx) => {
      await tx.query('alter table memory_events disable trigger memory_events_append_only');
      await tx.query(
        `do $$
         declare
           v_row memory_events;
           v_prev text := null;
         begin
           for v_row in select * from memory_events where agent_id = '${f.agents.scout}' order by seq loop
             update memory_events set detail = detail || '{"trust":"verified"}', hash_kind = 'sha256', prev_hash = v_prev,
               hash = encode(sha256(convert_to(coalesce(v_prev, '') || jsonb_build_object(
                 'agent_id', agent_id, 'seq', seq, 'person_id', person_id, 'actor_kind', actor_kind, 'actor_id', actor_id,
                 'action', action, 'target_kind', target_kind, 'target_id', target_id, 'detail', detail || '{"trust":"verified"}',
                 'occurred_at', to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))::text, 'UTF8')), 'hex')
             where id = v_row.id
             returning hash into v_prev;
           end loop;
         end
         $$`,
      );
      await tx.query('alter table memory_events enable trigger memory_events_append_only');
    });
    // Every link holds, but since keying no chain ends unkeyed: Roster seals each one with a keyed event.
    expect((await memory.audit.verify())[0]).toMatchObject({
      ok: false,
      events: 3,
      unkeyed: 3,
      broken: { seq: 3, problem: 'the chain ends with an unkeyed event: Roster seals every chain with a keyed one, so it was rewritten' },
    });
    // Against the kept head, the rewrite shows at that event.
    expect((await memory.audit.verify({ expect: [kept!] }))[0]).toMatchObject({
      ok: false,
      broken: { seq: 3, problem: 'its hash is not the expected head: the chain was rewritten' },
    });
  });

  it('shows a chain cut short only against a head kept elsewhere', async () => {
    const scope = f.dm('scout', 'ada');
    for (const content of ['Ada plays chess', 'Ada reads maps', 'Ada bakes bread', 'Ada rows on Sundays']) {
      await memory.remember(scope, { content, provenance: saidBy(f.people.ada) });
    }
    const [kept] = await memory.audit.heads(f.agents.scout);
    expect(kept).toMatchObject({ agentId: f.agents.scout, seq: 4 });
    expect((await memory.audit.verify({ expect: [kept!] }))[0]).toMatchObject({ ok: true, head: { seq: 4, hash: kept!.hash } });

    await f.database.ownerScope('test: remove the last events as the owner', async (tx) => {
      await tx.query('alter table memory_events disable trigger memory_events_append_only');
      await tx.query('delete from memory_events where agent_id = $1 and seq > 2', [f.agents.scout]);
      await tx.query('alter table memory_events enable trigger memory_events_append_only');
    });
    // Without the kept head, a shorter chain is whole.
    expect((await memory.audit.verify())[0]).toMatchObject({ ok: true, events: 2 });
    expect((await memory.audit.verify({ expect: [kept!] }))[0]).toMatchObject({
      ok: false,
      broken: { seq: 4, id: null, problem: 'the chain ends at event 2, before the expected head at event 4: events were removed' },
    });
    // The current head passes (positive control), and appending goes on from it.
    const [now] = await memory.audit.heads(f.agents.scout);
    expect((await memory.audit.verify({ expect: [now!] }))[0]).toMatchObject({ ok: true });
    await memory.remember(scope, { content: 'Ada sings in a choir', provenance: saidBy(f.people.ada) });
    expect((await memory.audit.verify({ expect: [now!] }))[0]).toMatchObject({ ok: true, events: 3 });

    // A chain cut to nothing is still named when a head was expected.
    await f.database.ownerScope('test: remove every event', async (tx) => {
      await tx.query('alter table memory_events disable trigger memory_events_append_only');
      await tx.query('delete from memory_events where agent_id = $1', [f.agents.scout]);
      await tx.query('alter table memory_events enable trigger memory_events_append_only');
    });
    expect(await memory.audit.verify()).toEqual([]);
    expect(await memory.audit.verify({ expect: [now!] })).toMatchObject([{ agentId: f.agents.scout, ok: false, events: 0, broken: { seq: now!.seq } }]);
  });
});

describe('migration 0014 on memory from before keying', () => {
  it('drops the unkeyed hashes it can, keeps the chains verifiable, and keyed events continue them', async () => {
    // A database at the last migration before keying, with memory made the old way.
    const before = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-migrations-'));
    for (const name of fs.readdirSync(defaultMigrationsDir).filter((file) => file < '0014')) fs.copyFileSync(path.join(defaultMigrationsDir, name), path.join(before, name));
    const test = await openTestDatabase({ migrate: false });
    try {
      const database = test.database;
      await migrate(database, { dir: before });
      const words = 'my bike lock code is 2290';
      const ids = await database.adminScope('test: memory made before keying', async (tx) => {
        const agents = await tx.query<{ id: string }>(`insert into agents (name, job) values ('Scout', 'finds'), ('Coder', 'codes') returning id`);
        const person = (await tx.query<{ id: string }>(`insert into people (name) values ('Ada') returning id`)).rows[0]!.id;
        const [scout, coder] = agents.rows.map((row) => row.id) as [string, string];
        const fact = (
          await tx.query<{ id: string }>(`insert into facts (agent_id, person_id, content, content_hash, trust) values ($1, $2, '', $3, 'forgotten') returning id`, [scout, person, contentHash(words)])
        ).rows[0]!.id;
        await tx.query(`insert into tombstones (agent_id, person_id, fact_id, content_hash, minhash) values ($1, $2, $3, $4, $5)`, [scout, person, fact, contentHash(words), minhash(words)]);
        const append = (agent: string, action: string, detail: object) =>
          tx.query(`select roster_append_event($1, $2, 'person', $3, $4, 'fact', $5, $6)`, [agent, person, person, action, fact, JSON.stringify(detail)]);
        await append(scout, 'remember', { trust: 'active', content_sha256: contentHash(words) });
        await append(scout, 'confirm', { from: 'active', to: 'verified' });
        await append(scout, 'forget', { tombstone: 'x', facts: [fact] });
        await append(coder, 'remember', { trust: 'active', content_sha256: contentHash('Ada writes Rust') });
        await append(coder, 'remember', { trust: 'active', content_sha256: contentHash('Ada writes Go') });
        await append(coder, 'remember', { trust: 'active', content_sha256: contentHash('Ada writes C') });
        return { scout, coder, person, fact };
      });
      // Coder's chain was tampered with before the upgrade: the upgrade must not mend it.
      await database.ownerScope('test: tamper before the upgrade', async (tx) => {
        await tx.query('alter table memory_events disable trigger memory_events_append_only');
        await tx.query(`update memory_events set action = 'confirm' where agent_id = $1 and seq = 2`, [ids.coder]);
        await tx.query('alter table memory_events enable trigger memory_events_append_only');
      });
      const dumpBefore = await database.adminScope('test: read', async (tx) => JSON.stringify([(await tx.query('select * from memory_events')).rows, (await tx.query('select * from facts')).rows]));
      // Positive control: the unkeyed hash is there before.
      expect(dumpBefore).toContain(contentHash(words));

      await migrate(database);
      const dumpAfter = await database.adminScope('test: read', async (tx) => JSON.stringify([(await tx.query('select * from memory_events')).rows, (await tx.query('select * from facts')).rows]));
      for (const text of [words, 'Ada writes Rust', 'Ada writes Go', 'Ada writes C']) expect(dumpAfter).not.toContain(contentHash(text));
      expect(dumpAfter).not.toContain('"content_sha256":');

      const keyed = createMemory({ database, embedder: createHashingEmbedder(), key: testInstallationKey });
      // Before the first process with the key seals them, the old chains end unkeyed, which verify does not accept.
      expect((await keyed.audit.verify({ agentId: ids.scout }))[0]).toMatchObject({ ok: false, events: 4, broken: { seq: 4 } });
      await keyed.prepare();
      const reports = await keyed.audit.verify();
      const scoutChain = reports.find((report) => report.agentId === ids.scout)!;
      const coderChain = reports.find((report) => report.agentId === ids.coder)!;
      // Scout's chain: three old events and the one that records the upgrade, unkeyed, then the keyed seal; whole.
      expect(scoutChain).toMatchObject({ ok: true, events: 5, unkeyed: 4 });
      const seals = await database.adminScope('test: the seals', async (tx) =>
        (await tx.query<{ agent_id: string; seq: string; hash_kind: string }>(`select agent_id, seq, hash_kind from memory_events where action = 'audit-keyed' order by agent_id`)).rows,
      );
      expect(seals.map((seal) => [seal.agent_id, Number(seal.seq), seal.hash_kind]).sort()).toEqual(
        [
          [ids.scout, 5, 'hmac-sha256'],
          [ids.coder, 5, 'hmac-sha256'],
        ].sort(),
      );
      // A second start seals nothing more.
      expect(await keyed.audit.seal()).toBe(0);
      // Coder's: still broken where it was.
      expect(coderChain).toMatchObject({ ok: false, broken: { seq: 2 } });
      const redact = await database.adminScope('test: the upgrade event', async (tx) =>
        (await tx.query<{ detail: { removed: string; events: number } }>(`select detail from memory_events where agent_id = $1 and action = 'audit-redact'`, [ids.scout])).rows,
      );
      expect(redact).toEqual([{ detail: expect.objectContaining({ removed: 'content_sha256', events: 1 }) }]);

      // Keyed events continue the unkeyed chain.
      const scope = { agentId: ids.scout, personId: ids.person, audience: 'private' as const };
      await keyed.remember(scope, { content: 'Ada rides to work', provenance: saidBy(ids.person) });
      expect((await keyed.audit.verify({ agentId: ids.scout }))[0]).toMatchObject({ ok: true, events: 6, unkeyed: 4 });
      // The old tombstone still refuses the forgotten words to automatic paths.
      expect(await keyed.isTombstoned(scope, words)).toBe(true);
      expect(await keyed.isTombstoned(scope, 'my bike is red')).toBe(false);
    } finally {
      await test.cleanup();
      fs.rmSync(before, { recursive: true, force: true });
    }
  });
});
