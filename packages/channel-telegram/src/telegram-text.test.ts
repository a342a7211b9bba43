import { serveChannel, type ServedChannel } from '@roster/channel-host';
import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { createRuntime } from '@roster/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTelegram, type FakeTelegram } from './fake-telegram.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

describe('Telegram text', () => {
  it('goes out with no parse mode, so Markdown and HTML characters arrive exactly as written', async () => {
    const test: TestDatabase = await openTestDatabase();
    cleanups.push(() => test.cleanup());
    const roster = await createRuntime({ config: parseConfig({}), database: test.database, key: testInstallationKey });
    await roster.core.directory.addAgent({ name: 'Scout', job: 'finds and checks sources' });
    const telegram: FakeTelegram = await startFakeTelegram();
    cleanups.push(() => telegram.close());
    const user = telegram.user(1);
    await roster.core.directory.linkIdentity((await roster.core.directory.addPerson({ name: 'Ada' })).id, 'telegram', user.id, user.name);
    const served: ServedChannel = await serveChannel({ adapter: telegram.adapter, core: roster.core });
    cleanups.push(() => served.stop());

    // An agent's reply through the core: the words it repeats keep every character.
    const written = 'my *tag* is <b>_bold_</b> & [x](y) `z` ~w~ \\ #1';
    await telegram.deliver({ chat: 'dm', from: user, text: `remember that ${written}` });
    await served.settled();
    // Sent as it stands, too: what Telegram's Markdown or HTML would read as markup.
    const raw = '<a href="tg://user?id=1">me</a> **not bold** __ ||spoiler|| &amp; &lt; 1 < 2 > 0';
    expect(await served.send({ chatId: telegram.dmChatId(user), recipient: user.id }, raw)).toBe(true);

    const sends = telegram.requests().filter((request) => request.method === 'sendMessage');
    expect(sends.map((request) => request.body.text)).toEqual([`Noted: ${written.replace(/^my /, 'your ')}`, raw]);
    for (const request of sends) {
      expect(request.body).not.toHaveProperty('parse_mode');
      expect(request.body).not.toHaveProperty('entities');
    }
    expect(telegram.sent().map((message) => message.text)).toEqual([`Noted: ${written.replace(/^my /, 'your ')}`, raw]);
  });
});
