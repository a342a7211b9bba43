import { channelVariables } from '@roster/channel-registry';
import { startFakeTelegram, type FakeTelegram } from '@roster/channel-telegram/testing';
import { until } from '@roster/channels/testing';
import { createLogger, parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { pairingHint } from '@roster/core';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { startGateway, type RunningGateway } from '@roster/gateway';
import { createRuntime } from '@roster/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeMatrix, type FakeMatrix } from './fake-matrix.js';

/**
 * Matrix end to end, beside Telegram, through the gateway as `roster start`
 * runs it (startGateway in process, the channels from the registry, the
 * configuration parsed with every registered channel's variables), over the
 * real runtime on PGlite with the offline engine. Only the platforms' far
 * sides are fakes: a local homeserver and a local Bot API.
 */
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** What the bot said in a chat once it has said `count` things there. */
async function said(platform: FakeMatrix | FakeTelegram, chatId: string, count: number): Promise<string[]> {
  await until(() => platform.sent().filter((message) => message.chatId === chatId).length >= count, `${count} messages in ${chatId}`, 20_000);
  return platform
    .sent()
    .filter((message) => message.chatId === chatId)
    .map((message) => message.text);
}

describe('Matrix through the gateway, beside Telegram', () => {
  it('links with a code, remembers, recalls in a new message; what is forgotten on Matrix is forgotten on Telegram', async () => {
    const matrix = await startFakeMatrix();
    cleanups.push(() => matrix.close());
    const telegram = await startFakeTelegram();
    cleanups.push(() => telegram.close());
    const config = parseConfig(
      {
        LOG_LEVEL: 'silent',
        MATRIX_HOMESERVER_URL: matrix.homeserverUrl,
        MATRIX_ACCESS_TOKEN: matrix.accessToken,
        TELEGRAM_BOT_TOKEN: telegram.token,
        TELEGRAM_API_ROOT: telegram.apiRoot,
      },
      channelVariables,
    );
    const test: TestDatabase = await openTestDatabase();
    cleanups.push(() => test.cleanup());
    const roster = await createRuntime({ config, database: test.database, key: testInstallationKey });
    const directory = roster.core.directory;
    await directory.addAgent({ name: 'Scout', job: 'finds and checks sources' });
    const ada = await directory.addPerson({ name: 'Ada' });

    const gateway: RunningGateway = await startGateway({
      config,
      database: test.database,
      key: testInstallationKey,
      core: roster.core,
      audit: roster.memory.audit,
      logger: createLogger(config),
      webhooksOn: 'server',
    });
    cleanups.push(() => gateway.stop());
    expect([...gateway.channels].sort()).toEqual(expect.arrayContaining(['matrix', 'telegram']));
    await until(() => matrix.requests().includes('GET /_matrix/client/v3/sync'), 'the gateway to sync with the Matrix homeserver', 20_000);

    // A stranger on Matrix gets the pairing hint, in Matrix's command form, and nothing is kept.
    const stranger = matrix.user(9);
    await matrix.deliver({ chat: 'dm', from: stranger, text: 'remember that my pin is 4321' });
    expect(await said(matrix, matrix.dmChatId(stranger), 1)).toEqual([pairingHint('!')]);

    // Ada links her Matrix handle, then her Telegram handle, each with a code the owner made for her.
    const onMatrix = matrix.user(1);
    await matrix.command(onMatrix, 'dm', `link ${(await directory.createLinkCode(ada.id)).code}`);
    expect(await said(matrix, matrix.dmChatId(onMatrix), 1)).toEqual(['Linked: you are Ada here now.']);
    const onTelegram = telegram.user(1);
    await telegram.command(onTelegram, 'dm', `link ${(await directory.createLinkCode(ada.id)).code}`);
    expect(await said(telegram, telegram.dmChatId(onTelegram), 1)).toEqual(['Linked: you are Ada here now.']);

    // Remembered on Matrix; recalled there in a new message, and on Telegram: one person, one agent.
    await matrix.deliver({ chat: 'dm', from: onMatrix, text: 'remember that my locker is number 12' });
    expect((await said(matrix, matrix.dmChatId(onMatrix), 2))[1]).toBe('Noted: your locker is number 12');
    await matrix.deliver({ chat: 'dm', from: onMatrix, text: 'what do you know about my locker?' });
    expect((await said(matrix, matrix.dmChatId(onMatrix), 3))[2]).toContain('your locker is number 12');
    await telegram.deliver({ chat: 'dm', from: onTelegram, text: 'what do you know about my locker?' });
    expect((await said(telegram, telegram.dmChatId(onTelegram), 2))[1]).toContain('your locker is number 12');

    // Forgotten on Matrix: gone on Telegram too.
    await matrix.command(onMatrix, 'dm', 'forget my locker');
    expect((await said(matrix, matrix.dmChatId(onMatrix), 4))[3]).toBe('Scout forgot it.');
    await telegram.command(onTelegram, 'dm', 'memory');
    expect((await said(telegram, telegram.dmChatId(onTelegram), 3))[2]).toBe('Scout knows nothing about you yet.');
    await telegram.deliver({ chat: 'dm', from: onTelegram, text: 'what do you know about my locker?' });
    expect((await said(telegram, telegram.dmChatId(onTelegram), 4))[3]).not.toContain('number 12');

    const kept = await test.database.adminScope('test: read what was kept', async (tx) => ({
      pin: (await tx.query(`select 1 from messages where content like '%4321%'`)).rows.length,
      locker: (await tx.query(`select 1 from facts where content like '%locker%'`)).rows.length,
      tombstones: (await tx.query('select 1 from tombstones where person_id = $1', [ada.id])).rows.length,
    }));
    expect(kept).toEqual({ pin: 0, locker: 0, tombstones: 1 });
    expect(matrix.unknownRequests()).toEqual([]);
  });
});
