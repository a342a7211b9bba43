import { testInstallationKey } from '@roster/config/testing';
import type { Database, Scope } from '@roster/db';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { createHashingEmbedder } from '../embedders/index.js';
import { createMemory, type Memory } from '../memory.js';
import type { Provenance } from '../types.js';

export interface MemoryFixture {
  test: TestDatabase;
  database: Database;
  memory: Memory;
  agents: { scout: string; coder: string };
  people: { ada: string; bob: string };
  dm(agent: 'scout' | 'coder', person: 'ada' | 'bob'): Scope;
  group(agent: 'scout' | 'coder', person: 'ada' | 'bob'): Scope;
  /** A conversation message from a person (or the agent's reply), as the transcript stores it. */
  message(conversation: string, role: 'person' | 'agent', content: string, ids: { person?: string; agent?: string }): Promise<string>;
  conversation(externalId: string): Promise<string>;
  cleanup(): Promise<void>;
}

export const saidBy = (personId: string, messageIds: string[] = [], explicit = false): Provenance => ({
  actor: { kind: 'person', id: personId },
  sourceMessageIds: messageIds,
  channel: 'cli',
  explicit,
});

/** A migrated database with two agents and two people, and the memory over it. */
export async function memoryFixture(): Promise<MemoryFixture> {
  const test = await openTestDatabase();
  const database = test.database;
  const seeded = await database.adminScope('test: seed agents and people', async (tx) => {
    const agents = await tx.query<{ id: string; name: string }>(
      `insert into agents (name, job) values ('Scout', 'finds things'), ('Coder', 'writes code') returning id, name`,
    );
    const people = await tx.query<{ id: string; name: string }>(
      `insert into people (name, role) values ('Ada', 'owner'), ('Bob', 'member') returning id, name`,
    );
    const id = (rows: Array<{ id: string; name: string }>, name: string) => rows.find((row) => row.name === name)!.id;
    return {
      agents: { scout: id(agents.rows, 'Scout'), coder: id(agents.rows, 'Coder') },
      people: { ada: id(people.rows, 'Ada'), bob: id(people.rows, 'Bob') },
    };
  });
  const memory = createMemory({ database, embedder: createHashingEmbedder(), key: testInstallationKey });
  await memory.prepare();
  return {
    test,
    database,
    memory,
    ...seeded,
    dm: (agent, person) => ({ agentId: seeded.agents[agent], personId: seeded.people[person], audience: 'private' }),
    group: (agent, person) => ({ agentId: seeded.agents[agent], personId: seeded.people[person], audience: 'group' }),
    async conversation(externalId) {
      return database.adminScope('test: open a conversation', async (tx) => {
        const { rows } = await tx.query<{ id: string }>(
          `insert into conversations (channel, external_id) values ('cli', $1) returning id`,
          [externalId],
        );
        return rows[0]!.id;
      });
    },
    async message(conversation, role, content, ids) {
      return database.adminScope('test: store a message', async (tx) => {
        const { rows } = await tx.query<{ id: string }>(
          `insert into messages (conversation_id, role, person_id, agent_id, content) values ($1, $2, $3, $4, $5) returning id`,
          [conversation, role, ids.person ?? null, ids.agent ?? null, content],
        );
        return rows[0]!.id;
      });
    },
    cleanup: () => test.cleanup(),
  };
}
