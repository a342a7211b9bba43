/**
 * Roster for this package's tests: the real runtime on a test database of
 * its own (PGlite), the offline engine, Scout bound to the Matrix bot under
 * the pairing policy, and Olive its owner. Test-only (excluded from the build).
 */
import { serveChannel, type ServeChannelOptions, type ServedChannel } from '@roster/channel-host';
import type { ChannelAdapter } from '@roster/channels';
import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import type { Agent, Person } from '@roster/core';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { createApprovalDesk } from '@roster/learning';
import { createRuntime, type Runtime } from '@roster/runtime';

export interface TestRoster {
  test: TestDatabase;
  roster: Runtime;
  scout: Agent;
  owner: Person;
  /** Serve an adapter through the core, with the approval desk; stopped by `cleanup`. */
  serve(adapter: ChannelAdapter, options?: Partial<ServeChannelOptions>): Promise<ServedChannel>;
  /** A new person of the wallet, linked to this Matrix handle. */
  link(handle: { id: string; name: string }, person?: Person): Promise<Person>;
  /** A lesson waiting for the owner's decision; resolves its id. */
  propose(text: string): Promise<string>;
  query<T>(sql: string, values: unknown[]): Promise<T[]>;
  cleanup(): Promise<void>;
}

export async function startTestRoster(): Promise<TestRoster> {
  const test = await openTestDatabase();
  const roster = await createRuntime({ config: parseConfig({}), database: test.database, key: testInstallationKey });
  const directory = roster.core.directory;
  const scout = await directory.addAgent({ name: 'Scout', job: 'finds and checks sources' });
  const owner = await directory.addPerson({ name: 'Olive', role: 'owner' });
  await directory.bindChannel({ channel: 'matrix', account: 'default', agent: 'Scout', policy: 'pairing' });
  const served: ServedChannel[] = [];
  let people = 0;
  const query = async <T>(sql: string, values: unknown[]): Promise<T[]> =>
    test.database.adminScope('matrix test: read', async (tx) => (await tx.query<T & Record<string, unknown>>(sql, values)).rows);
  return {
    test,
    roster,
    scout,
    owner,
    async serve(adapter, options = {}) {
      const channel = await serveChannel({
        adapter,
        core: roster.core,
        approvals: createApprovalDesk(test.database, roster.memory.audit, directory),
        approvalPollMs: 60_000,
        ...options,
      });
      served.push(channel);
      return channel;
    },
    async link(handle, person) {
      const who = person ?? (await directory.addPerson({ name: `Person${(people += 1)}` }));
      await directory.linkIdentity(who.id, 'matrix', handle.id, handle.name);
      return who;
    },
    async propose(text) {
      const [approval] = await query<{ id: string }>(`insert into approvals (agent_id, text, proposed_by_kind, proposed_by) values ($1, $2, 'agent', 'Scout') returning id`, [scout.id, text]);
      return approval!.id;
    },
    query,
    async cleanup() {
      for (const channel of served.splice(0)) await channel.stop();
      await test.cleanup();
    },
  };
}
