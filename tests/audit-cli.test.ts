import fs from 'node:fs';
import path from 'node:path';
import { migrate, openEmbeddedDatabase } from '@roster/db';
import { createHashingEmbedder, createMemory } from '@roster/memory';
import { afterEach, describe, expect, it } from 'vitest';
import { runRoster, tempDataDir } from './support/roster-process.js';

const folders: string[] = [];
afterEach(() => {
  while (folders.length > 0) fs.rmSync(folders.pop()!, { recursive: true, force: true });
});

async function seed(dataDir: string): Promise<void> {
  const database = await openEmbeddedDatabase(path.join(dataDir, 'pglite'));
  try {
    await migrate(database);
    const ids = await database.adminScope('test: seed', async (tx) => {
      const agents = await tx.query<{ id: string }>(`insert into agents (name, job) values ('Scout', 'finds'), ('Coder', 'codes') returning id`);
      const people = await tx.query<{ id: string }>(`insert into people (name) values ('Ada') returning id`);
      return { scout: agents.rows[0]!.id, coder: agents.rows[1]!.id, ada: people.rows[0]!.id };
    });
    const memory = createMemory({ database, embedder: createHashingEmbedder() });
    const ada = { actor: { kind: 'person' as const, id: ids.ada } };
    for (const content of ['Ada likes tea', 'Ada cycles to work', 'Ada lives in Turin']) {
      await memory.remember({ agentId: ids.scout, personId: ids.ada, audience: 'private' }, { content, provenance: ada });
    }
    await memory.remember({ agentId: ids.coder, personId: ids.ada, audience: 'private' }, { content: 'Ada writes Rust', provenance: ada });
  } finally {
    await database.close();
  }
}

async function tamper(dataDir: string, agent: string, seq: number): Promise<void> {
  const database = await openEmbeddedDatabase(path.join(dataDir, 'pglite'));
  try {
    // The owner of the schema can switch its own trigger off; the chain still shows where.
    await database.ownerScope('test: tamper as the owner', async (tx) => {
      await tx.query('alter table memory_events disable trigger memory_events_append_only');
      await tx.query(`update memory_events set detail = '{"trust":"verified"}' where seq = $1 and agent_id = (select id from agents where name = $2)`, [seq, agent]);
      await tx.query('alter table memory_events enable trigger memory_events_append_only');
    });
  } finally {
    await database.close();
  }
}

describe('roster audit verify', () => {
  it('passes on intact chains, then names the first broken link after tampering', async () => {
    const dir = tempDataDir();
    folders.push(dir);
    await seed(dir);

    const intact = await runRoster(['audit', 'verify'], { ROSTER_DATA_DIR: dir });
    expect(intact.code).toBe(0);
    expect(intact.stdout).toMatch(/^Coder\s+ok\s+1 events$/m);
    expect(intact.stdout).toMatch(/^Scout\s+ok\s+3 events$/m);

    await tamper(dir, 'Scout', 2);
    const broken = await runRoster(['audit', 'verify', '--json'], { ROSTER_DATA_DIR: dir });
    expect(broken.code).toBe(1);
    const report = JSON.parse(broken.stdout) as { ok: boolean; chains: Array<{ agent: string; ok: boolean; broken: { seq: number; problem: string } | null }> };
    expect(report.ok).toBe(false);
    expect(report.chains.find((chain) => chain.agent === 'Scout')).toMatchObject({ ok: false, broken: { seq: 2, problem: 'its content does not match its hash' } });
    expect(report.chains.find((chain) => chain.agent === 'Coder')).toMatchObject({ ok: true, broken: null });

    const other = await runRoster(['audit', 'verify', '--agent', 'coder'], { ROSTER_DATA_DIR: dir });
    expect(other.code).toBe(0);
    const unknown = await runRoster(['audit', 'verify', '--agent', 'Nobody'], { ROSTER_DATA_DIR: dir });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No agent named "Nobody"/);
  });
});
