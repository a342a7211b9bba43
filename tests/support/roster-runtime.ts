import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import type { Agent, Person } from '@roster/core';
import type { Database } from '@roster/db';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { createRuntime, type Runtime } from '@roster/runtime';

export interface RosterFixture {
  test: TestDatabase;
  database: Database;
  roster: Runtime;
  agents: Record<string, Agent>;
  people: Record<string, Person>;
  /** Every learning event, as (agent name, person name, kind) triples, sorted. */
  learningEvents(): Promise<string[]>;
  cleanup(): Promise<void>;
}

/** A migrated test database and the real runtime over it (offline engine unless an agent names another). */
export async function rosterFixture(setup: { agents: Array<{ name: string; engine?: string }>; people: string[] }): Promise<RosterFixture> {
  const test = await openTestDatabase();
  const roster = await createRuntime({ config: parseConfig({}), database: test.database, key: testInstallationKey });
  const agents: Record<string, Agent> = {};
  for (const agent of setup.agents) {
    agents[agent.name] = await roster.core.directory.addAgent({ name: agent.name, job: `the ${agent.name} job`, ...(agent.engine === undefined ? {} : { engine: agent.engine }) });
  }
  const people: Record<string, Person> = {};
  for (const name of setup.people) people[name] = await roster.core.directory.addPerson({ name });
  return {
    test,
    database: test.database,
    roster,
    agents,
    people,
    async learningEvents() {
      return test.database.adminScope('test: read learning events', async (tx) => {
        const { rows } = await tx.query<{ agent: string; person: string | null; kind: string }>(
          `select a.name as agent, p.name as person, e.kind from learning_events e join agents a on a.id = e.agent_id left join people p on p.id = e.person_id`,
        );
        return rows.map((row) => `${row.agent}/${row.person}/${row.kind}`).sort();
      });
    },
    cleanup: () => test.cleanup(),
  };
}
