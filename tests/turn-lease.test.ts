/**
 * A conversation's turn across processes: two runtimes over one database, as
 * a gateway and a server are, answer in the same conversation one turn at a
 * time. The turn is taken with the message's routing and ends with its reply.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import type { Engine, InboundMessage } from '@roster/core';
import { openTestDatabase } from '@roster/db/testing';
import { createOfflineEngine } from '@roster/engines';
import { createRuntime } from '@roster/runtime';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/**
 * Two processes over one database, as a gateway and a server are: the first
 * one's engine answers only once the test releases it; Scout and Ada exist.
 */
async function twoProcesses() {
  const test = await openTestDatabase();
  cleanups.push(() => test.cleanup());
  let started!: () => void;
  const engineStarted = new Promise<void>((resolve) => (started = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const offline = createOfflineEngine({ agentName: 'Scout' });
  const held: Engine = {
    ...offline,
    async run(request) {
      started();
      await released;
      return offline.run(request);
    },
  };
  const first = await createRuntime({ config: parseConfig({}), database: test.database, key: testInstallationKey, engineFor: () => held });
  const second = await createRuntime({ config: parseConfig({}), database: test.database, key: testInstallationKey });
  await first.core.directory.addAgent({ name: 'Scout', job: 'remembers' });
  const ada = await first.core.directory.addPerson({ name: 'Ada' });
  return { test, first, second, ada, engineStarted, release };
}

describe('the turn of a conversation', () => {
  it('is held by the process answering; another waits for it, and takes it once the reply is stored', async () => {
    const { first, second, ada, engineStarted, release } = await twoProcesses();
    const say = (text: string): InboundMessage => ({ channel: 'cli', conversation: { externalId: 'shared', kind: 'dm' }, sender: { personId: ada.id }, text });

    const answering = first.core.handle(say('remember that the gate is painted teal'), { agent: 'Scout' });
    await engineStarted;
    // The second process finds the turn taken: it waits, and a cancelled wait stores nothing.
    const cancel = new AbortController();
    const waiting = second.core.handle(say('what do you know about the gate'), { agent: 'Scout', signal: cancel.signal });
    cancel.abort();
    await expect(waiting).rejects.toMatchObject({ code: 'turn_aborted' });
    const before = await first.core.transcript({ channel: 'cli', externalId: 'shared', personId: ada.id });
    expect(before?.lines.map((line) => line.text)).toEqual(['remember that the gate is painted teal']);

    release();
    expect((await answering).replies.map((reply) => reply.text)).toEqual(['Noted: the gate is painted teal']);
    // The reply ended the turn: the second process takes it at once and reads what the first stored.
    const next = await second.core.handle(say('what do you know about the gate'), { agent: 'Scout' });
    expect(next.replies.map((reply) => reply.text)).toEqual(['- the gate is painted teal']);
    const after = await second.core.transcript({ channel: 'cli', externalId: 'shared', personId: ada.id });
    expect(after?.lines.map((line) => line.text)).toEqual([
      'remember that the gate is painted teal',
      'Noted: the gate is painted teal',
      'what do you know about the gate',
      '- the gate is painted teal',
    ]);
  });

  it('is kept by a long answer, renewed while it thinks and never more than 30 s ahead (a killed process’s lapses as soon), and free at once after the reply', async () => {
    const { test, first, second, ada, engineStarted, release } = await twoProcesses();
    const say = (text: string): InboundMessage => ({ channel: 'cli', conversation: { externalId: 'long', kind: 'dm' }, sender: { personId: ada.id }, text });
    const lease = () =>
      test.database.adminScope('test: read the turn’s lease', async (tx) => {
        const { rows } = await tx.query<{ expires: Date | null; ahead: number | null }>(
          `select turn_expires_at as expires, extract(epoch from turn_expires_at - now())::float8 as ahead from conversations where external_id = 'long'`,
        );
        return rows[0]!;
      });

    const answering = first.core.handle(say('remember that the gate is painted teal'), { agent: 'Scout' });
    await engineStarted;
    const taken = await lease();
    expect(taken.ahead).toBeGreaterThan(0);
    expect(taken.ahead).toBeLessThanOrEqual(30);
    // While the engine thinks, the turn is renewed: its expiry moves on, and stays within 30 s of now.
    const deadline = Date.now() + 60_000;
    let renewed = taken;
    while (renewed.expires!.getTime() <= taken.expires!.getTime() && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      renewed = await lease();
    }
    expect(renewed.expires!.getTime()).toBeGreaterThan(taken.expires!.getTime());
    expect(renewed.ahead).toBeLessThanOrEqual(30);

    release();
    expect((await answering).replies.map((reply) => reply.text)).toEqual(['Noted: the gate is painted teal']);
    // The reply ended the turn, and no renewal took it back: the other process answers at once.
    const next = await second.core.handle(say('what do you know about the gate'), { agent: 'Scout' });
    expect(next.replies.map((reply) => reply.text)).toEqual(['- the gate is painted teal']);
  });
});
