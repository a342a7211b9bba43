import fs from 'node:fs';
import path from 'node:path';
import { testInstallationKey, testSecretKey } from '@roster/config/testing';
import { migrate, openEmbeddedDatabase } from '@roster/db';
import { createHashingEmbedder, createMemory } from '@roster/memory';
import { afterEach, describe, expect, it } from 'vitest';
import { runRoster, tempDataDir } from './support/roster-process.js';

const folders: string[] = [];
afterEach(() => {
  while (folders.length > 0) fs.rmSync(folders.pop()!, { recursive: true, force: true });
});

/** A data folder whose memory was written with the test key: Scout has three events, Coder one. */
async function seed(): Promise<string> {
  const dataDir = tempDataDir();
  folders.push(dataDir);
  const database = await openEmbeddedDatabase(path.join(dataDir, 'pglite'));
  try {
    await migrate(database);
    const ids = await database.adminScope('test: seed', async (tx) => {
      const agents = await tx.query<{ id: string }>(`insert into agents (name, job) values ('Scout', 'finds'), ('Coder', 'codes') returning id`);
      const people = await tx.query<{ id: string }>(`insert into people (name) values ('Ada') returning id`);
      return { scout: agents.rows[0]!.id, coder: agents.rows[1]!.id, ada: people.rows[0]!.id };
    });
    const memory = createMemory({ database, embedder: createHashingEmbedder(), key: testInstallationKey });
    await memory.prepare();
    const ada = { actor: { kind: 'person' as const, id: ids.ada } };
    for (const content of ['Ada likes tea', 'Ada cycles to work', 'Ada lives in Turin']) {
      await memory.remember({ agentId: ids.scout, personId: ids.ada, audience: 'private' }, { content, provenance: ada });
    }
    await memory.remember({ agentId: ids.coder, personId: ids.ada, audience: 'private' }, { content: 'Ada writes Rust', provenance: ada });
  } finally {
    await database.close();
  }
  return dataDir;
}

/** Run a statement as the owner of the schema, with the append-only trigger switched off, as someone who owns the database could. */
async function asOwner(dataDir: string, sql: string, params: unknown[]): Promise<void> {
  const database = await openEmbeddedDatabase(path.join(dataDir, 'pglite'));
  try {
    await database.ownerScope('test: change history as the owner', async (tx) => {
      await tx.query('alter table memory_events disable trigger memory_events_append_only');
      await tx.query(sql, params);
      await tx.query('alter table memory_events enable trigger memory_events_append_only');
    });
  } finally {
    await database.close();
  }
}

/** Tests that run the real process many times: each start boots Node and the embedded database. */
const manyProcesses = 300_000;

interface VerifyReport {
  ok: boolean;
  chains: Array<{ agent: string; ok: boolean; events: number; broken: { seq: number; id: string | null; problem: string } | null }>;
}

describe('roster audit verify', () => {
  it('passes on intact chains, then names the first broken link after tampering', async () => {
    const dir = await seed();
    const env = { ROSTER_DATA_DIR: dir, ROSTER_SECRET_KEY: testSecretKey };

    const intact = await runRoster(['audit', 'verify'], env);
    expect(intact.code).toBe(0);
    expect(intact.stdout).toMatch(/^Coder\s+ok\s+1 events$/m);
    expect(intact.stdout).toMatch(/^Scout\s+ok\s+3 events$/m);

    await asOwner(dir, `update memory_events set detail = '{"trust":"verified"}' where seq = 2 and agent_id = (select id from agents where name = 'Scout')`, []);
    const broken = await runRoster(['audit', 'verify', '--json'], env);
    expect(broken.code).toBe(1);
    const report = JSON.parse(broken.stdout) as VerifyReport;
    expect(report.ok).toBe(false);
    expect(report.chains.find((chain) => chain.agent === 'Scout')).toMatchObject({ ok: false, broken: { seq: 2, problem: 'its content does not match its hash' } });
    expect(report.chains.find((chain) => chain.agent === 'Coder')).toMatchObject({ ok: true, broken: null });
    const text = await runRoster(['audit', 'verify'], env);
    expect(text.stdout).toMatch(/^Scout\s+BROKEN\s+at event 2 \([0-9a-f-]{36}\): its content does not match its hash$/m);

    const other = await runRoster(['audit', 'verify', '--agent', 'coder'], env);
    expect(other.code).toBe(0);
    const unknown = await runRoster(['audit', 'verify', '--agent', 'Nobody'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No agent named "Nobody"/);
  }, manyProcesses);

  it('with another installation key, refuses to run instead of calling every link broken', async () => {
    const dir = await seed();
    const wrong = await runRoster(['audit', 'verify'], { ROSTER_DATA_DIR: dir, ROSTER_SECRET_KEY: 'cd'.repeat(32) });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^roster audit verify: This database is keyed with the installation key [0-9a-f]{16}, but this process holds/)]);
    // Positive control: the right key verifies.
    expect((await runRoster(['audit', 'verify'], { ROSTER_DATA_DIR: dir, ROSTER_SECRET_KEY: testSecretKey })).code).toBe(0);
  }, manyProcesses);
});

describe('roster audit head, and verify --expect', () => {
  it('prints each chain’s head; a chain cut short since shows against it, and a current head passes', async () => {
    const dir = await seed();
    const env = { ROSTER_DATA_DIR: dir, ROSTER_SECRET_KEY: testSecretKey };

    const heads = await runRoster(['audit', 'head'], env);
    expect(heads.code).toBe(0);
    expect(heads.stdout).toMatch(/^Coder {2}1:[0-9a-f]{64}\nScout {2}3:[0-9a-f]{64}\n$/);
    const json = await runRoster(['audit', 'head', '--agent', 'Scout', '--json'], env);
    const [scout] = JSON.parse(json.stdout) as Array<{ agent: string; agentId: string; seq: number; hash: string; head: string }>;
    expect(scout).toMatchObject({ agent: 'Scout', seq: 3, hash: expect.stringMatching(/^[0-9a-f]{64}$/), head: expect.stringMatching(/^3:/) });
    expect(heads.stdout).toContain(`Scout  ${scout!.head}`);

    // Positive control: the chain reaches the kept head.
    const reaches = await runRoster(['audit', 'verify', '--agent', 'Scout', '--expect', scout!.head], env);
    expect(reaches.code).toBe(0);
    expect(reaches.stdout).toMatch(/^Scout\s+ok\s+3 events, at or after 3:/m);

    // The owner removes the last two events: the shorter chain is whole, so verify alone passes…
    await asOwner(dir, `delete from memory_events where seq > 1 and agent_id = (select id from agents where name = 'Scout')`, []);
    const alone = await runRoster(['audit', 'verify', '--agent', 'Scout'], env);
    expect(alone.code).toBe(0);
    expect(alone.stdout).toMatch(/^Scout\s+ok\s+1 events$/m);
    // …and against the kept head it fails, naming where the chain now ends.
    const cut = await runRoster(['audit', 'verify', '--agent', 'Scout', '--expect', scout!.head, '--json'], env);
    expect(cut.code).toBe(1);
    expect((JSON.parse(cut.stdout) as VerifyReport).chains).toEqual([
      expect.objectContaining({
        agent: 'Scout',
        ok: false,
        events: 1,
        broken: { seq: 3, id: null, problem: 'the chain ends at event 1, before the expected head at event 3: events were removed' },
      }),
    ]);
    const cutText = await runRoster(['audit', 'verify', '--agent', 'Scout', '--expect', scout!.head], env);
    expect(cutText.stdout).toMatch(/^Scout\s+BROKEN\s+at event 3: the chain ends at event 1/m);

    // The head printed now passes (positive control).
    const now = JSON.parse((await runRoster(['audit', 'head', '--agent', 'Scout', '--json'], env)).stdout) as Array<{ head: string }>;
    expect(now[0]!.head).toMatch(/^1:/);
    expect((await runRoster(['audit', 'verify', '--agent', 'Scout', '--expect', now[0]!.head], env)).code).toBe(0);

    // A head that is not one, or one without its agent: usage errors, in one line.
    const malformed = await runRoster(['audit', 'verify', '--agent', 'Scout', '--expect', '3:xyz'], env);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr.trim().split('\n')).toEqual([expect.stringMatching(/--expect takes a head as roster audit head prints it, SEQ:HASH/)]);
    const noAgent = await runRoster(['audit', 'verify', '--expect', scout!.head], env);
    expect(noAgent.code).toBe(2);
    expect(noAgent.stderr).toMatch(/--expect needs --agent/);
  }, manyProcesses);
});
