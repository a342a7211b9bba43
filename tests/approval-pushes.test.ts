import { testInstallationKey } from '@roster/config/testing';
import { parseConfig } from '@roster/config';
import { serveChannel } from '@roster/channel-host';
import { until } from '@roster/channels/testing';
import { openTestDatabase } from '@roster/db/testing';
import { createApprovalDesk } from '@roster/learning';
import { createRuntime } from '@roster/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTelegram } from '@roster/channel-telegram/testing';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

describe('approvals pushed to the owner', () => {
  it('are pushed once per handle: a restarted gateway does not push them again, but pushes a new one', async () => {
    const test = await openTestDatabase();
    cleanups.push(() => test.cleanup());
    const runtime = await createRuntime({ config: parseConfig({}), database: test.database, key: testInstallationKey });
    const { directory } = runtime.core;
    const scout = await directory.addAgent({ name: 'Scout', job: 'finds sources' });
    const owner = await directory.addPerson({ name: 'Olive', role: 'owner' });
    const propose = async (text: string) =>
      test.database.adminScope('test: propose a lesson', async (tx) => {
        await tx.query(`insert into approvals (agent_id, text, proposed_by_kind, proposed_by) values ($1, $2, 'agent', 'Scout')`, [scout.id, text]);
      });
    const desk = () => createApprovalDesk(test.database, runtime.memory.audit, directory);
    await propose('Give two sources for every claim.');

    const first = await startFakeTelegram();
    cleanups.push(() => first.close());
    const handle = first.user(1);
    await directory.linkIdentity(owner.id, 'telegram', handle.id, handle.name);
    const servedFirst = await serveChannel({ adapter: first.adapter, core: runtime.core, approvals: desk(), approvalPollMs: 60_000 });
    await until(() => first.sent().length === 1, 'the approval to reach the owner');
    expect(first.sent()[0]!.text).toContain('Give two sources for every claim.');
    await servedFirst.stop();

    // The gateway starts again (a new process would hold nothing in memory): nothing is pushed twice.
    const second = await startFakeTelegram();
    cleanups.push(() => second.close());
    const servedSecond = await serveChannel({ adapter: second.adapter, core: runtime.core, approvals: desk(), approvalPollMs: 60_000 });
    cleanups.push(() => servedSecond.stop());
    expect(await servedSecond.pushApprovals()).toBe(0);
    expect(second.sent()).toEqual([]);
    // Positive control: a new approval is pushed by the restarted gateway.
    await propose('Say how each source was checked.');
    expect(await servedSecond.pushApprovals()).toBeGreaterThan(0);
    expect(second.sent().map((message) => message.text).join('\n')).toContain('Say how each source was checked.');
    expect(second.sent().map((message) => message.text).join('\n')).not.toContain('Give two sources');
  });
});
