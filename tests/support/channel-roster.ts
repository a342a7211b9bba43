import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { serveChannel, type ServeChannelOptions, type ServedChannel } from '@roster/channel-host';
import type { FakePlatform, PlatformUser } from '@roster/channels/testing';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { createRuntime } from '@roster/runtime';
import { startFakeOpenAi, type FakeAnswer } from './fake-openai.js';

export interface ChannelRoster {
  test: TestDatabase;
  /** The platform's first person (`platform.user(1)`), linked to Pia. */
  user: PlatformUser;
  served: ServedChannel;
  /** Stop serving, drop the database, close the fake model (the platform stays the caller's). */
  cleanup(): Promise<void>;
}

/**
 * Roster on one channel, as a conversation with it runs: a local fake of the
 * OpenAI API giving every answer as `answer`, the real runtime on a migrated
 * test database of its own, Writer (on that model) and Pia, linked to the
 * platform's first person, and the platform's adapter served to the core
 * with `streaming`.
 */
export async function startChannelRoster(platform: FakePlatform, options: { answer: FakeAnswer; streaming: ServeChannelOptions['streaming'] }): Promise<ChannelRoster> {
  const model = await startFakeOpenAi(() => options.answer);
  const test = await openTestDatabase();
  const runtime = await createRuntime({ config: parseConfig({}), database: test.database, key: testInstallationKey });
  const { directory } = runtime.core;
  await directory.addAgent({ name: 'Writer', job: 'writes plans', engine: model.engine });
  const person = await directory.addPerson({ name: 'Pia' });
  const user = platform.user(1);
  await directory.linkIdentity(person.id, platform.adapter.channel, user.id, user.name);
  const served = await serveChannel({ adapter: platform.adapter, core: runtime.core, streaming: options.streaming });
  return {
    test,
    user,
    served,
    async cleanup() {
      await served.stop();
      await test.cleanup();
      await model.close();
    },
  };
}
