/**
 * What every case of the channel conformance suite shares: one PGlite
 * database with two agents and an owner for the whole suite, a fresh fake
 * platform per case, and the helpers that speak to it. Test-only: it imports vitest.
 */
import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import type { Agent, Person } from '@roster/core';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { createRuntime, type Runtime } from '@roster/runtime';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import type { ChannelEvent } from '@roster/contracts';
import { serveChannel, type ServedChannel, type ServeChannelOptions } from '../serve.js';
import type { ChannelHarness, FakePlatform, PlatformUser, SentRecord } from '@roster/channels/testing';

interface Fixture {
  test: TestDatabase;
  roster: Runtime;
  agents: Record<'Scout' | 'Coder', Agent>;
  owner: Person;
}

/** Registers the suite's hooks (call inside its `describe`) and returns what the cases use. */
export function conformanceContext(harness: ChannelHarness) {
  let fixture: Fixture;
  let platform: FakePlatform;
  let served: ServedChannel | undefined;
  let people = 0;
  let users = 0;

  beforeAll(async () => {
    const test = await openTestDatabase();
    const roster = await createRuntime({ config: parseConfig({}), database: test.database, key: testInstallationKey });
    const directory = roster.core.directory;
    const agents = {
      Scout: await directory.addAgent({ name: 'Scout', job: 'finds and checks sources' }),
      Coder: await directory.addAgent({ name: 'Coder', job: 'writes code' }),
    };
    const owner = await directory.addPerson({ name: 'Olive', role: 'owner' });
    fixture = { test, roster, agents, owner };
  });
  afterAll(async () => {
    await fixture?.test.cleanup();
  });
  beforeEach(async () => {
    platform = await harness.start();
  });
  afterEach(async () => {
    await served?.stop();
    served = undefined;
    await platform.close();
  });

  const channel = () => platform.adapter.channel;
  const prefix = () => platform.adapter.capabilities.commandPrefix;
  /** A new person on the platform, not linked to anyone. */
  const stranger = (): PlatformUser => platform.user(++users);
  /** A new person on the platform, linked to a new person of the wallet (or to `person`). */
  async function linked(person?: Person): Promise<{ user: PlatformUser; person: Person }> {
    const user = stranger();
    const who = person ?? (await fixture.roster.core.directory.addPerson({ name: `Person${++people}` }));
    await fixture.roster.core.directory.linkIdentity(who.id, channel(), user.id, user.name);
    return { user, person: who };
  }
  /** The account talks to Scout unless a person switches (two agents in the wallet: without a binding, people are asked which). */
  const bindToScout = () => fixture.roster.core.directory.bindChannel({ channel: channel(), account: platform.adapter.account, agent: 'Scout', policy: 'pairing' });
  async function serve(options: Partial<ServeChannelOptions> = {}): Promise<ServedChannel> {
    await bindToScout();
    served = await serveChannel({ adapter: platform.adapter, core: fixture.roster.core, ...options });
    return served;
  }
  const sentTo = (chatId: string): SentRecord[] => platform.sent().filter((message) => message.chatId === chatId);
  /** Say something in a one-to-one chat and wait for it to be handled. */
  async function say(user: PlatformUser, text: string): Promise<SentRecord[]> {
    const before = platform.sent().length;
    await platform.deliver({ chat: 'dm', from: user, text });
    await served!.settled();
    return platform.sent().slice(before);
  }
  async function command(user: PlatformUser, words: string, chat: 'dm' | 'group' = 'dm'): Promise<string> {
    const before = platform.sent().length;
    await platform.command(user, chat, words);
    await served!.settled();
    return platform
      .sent()
      .slice(before)
      .map((message) => message.text)
      .join('\n');
  }
  const query = async <T>(sql: string, values: unknown[]): Promise<T[]> =>
    fixture.test.database.adminScope('conformance: read', async (tx) => (await tx.query<T & Record<string, unknown>>(sql, values)).rows);
  async function capture(): Promise<ChannelEvent[]> {
    const captured: ChannelEvent[] = [];
    const controller = new AbortController();
    await platform.adapter.start({
      signal: controller.signal,
      onMessage: (event) => void captured.push(event),
      onApprovalPress: async () => ({ text: 'not here', decided: false }),
    });
    return captured;
  }

  return {
    get fixture(): Fixture {
      return fixture;
    },
    get platform(): FakePlatform {
      return platform;
    },
    get served(): ServedChannel | undefined {
      return served;
    },
    /** A number for the next person's name, unique in the suite. */
    personNumber: () => ++people,
    channel,
    prefix,
    stranger,
    linked,
    bindToScout,
    serve,
    sentTo,
    say,
    command,
    query,
    capture,
  };
}

export type ConformanceContext = ReturnType<typeof conformanceContext>;
