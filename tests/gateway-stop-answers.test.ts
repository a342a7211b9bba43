import { until } from '@roster/channels/testing';
import { channelVariables } from '@roster/channel-registry';
import { startFakeTelegram, type FakeTelegram } from '@roster/channel-telegram/testing';
import { createLogger, parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { createLeaseStore, startGateway } from '@roster/gateway';
import { createRuntime } from '@roster/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi, type FakeRequest } from './support/fake-openai.js';

/**
 * A gateway being stopped answers what it took before it lets the bot
 * account go. Its sends are fenced by its own clock (two thirds of the
 * lease since the last renewal), so the lease must go on being renewed
 * while those answers run: here the lease is short (3 s) and the model
 * holds its answer until the stopping gateway has renewed its lease past
 * that margin; the answer must still reach the person, from
 * the gateway that took the message, once.
 */
let test: TestDatabase;
let fake: FakeTelegram;
let model: Awaited<ReturnType<typeof startFakeOpenAi>>;
let letGo: () => void = () => undefined;
const held = new Promise<void>((resolve) => (letGo = resolve));
const lastWords = (request: FakeRequest) => request.parts.map((part) => String(part.text ?? '')).join('');
/** Short, so that the stop outlives the margin its sends are valid for (two thirds of it) several times within its 15 s grace; long enough for a busy machine to renew it in time. */
const leaseMs = 3000;

beforeAll(async () => {
  test = await openTestDatabase();
  fake = await startFakeTelegram();
  model = await startFakeOpenAi(async (request) => {
    if (lastWords(request) === 'parcel 1') await held;
    return { text: `Heard: ${lastWords(request)}` };
  });
});

afterAll(async () => {
  letGo();
  await model?.close();
  await fake?.close();
  await test?.cleanup();
});

describe('a gateway stopped while it answers', () => {
  it('keeps its lease renewed until it has answered what it took, so its answers are not fenced off', { timeout: 120_000 }, async () => {
    const config = parseConfig({ TELEGRAM_BOT_TOKEN: fake.token, TELEGRAM_API_ROOT: fake.apiRoot, LOG_LEVEL: 'silent' }, channelVariables);
    const roster = await createRuntime({ config, database: test.database, key: testInstallationKey });
    await roster.core.directory.addAgent({ name: 'Scout', job: 'keeps notes', engine: model.engine });
    const ada = await roster.core.directory.addPerson({ name: 'Ada', role: 'owner' });
    const user = fake.user(2);
    await roster.core.directory.linkIdentity(ada.id, 'telegram', user.id);
    const gateway = await startGateway({ config, database: test.database, key: testInstallationKey, core: roster.core, audit: roster.memory.audit, logger: createLogger(config), leaseMs, webhooksOn: 'server' });
    expect(gateway.channels).toEqual(['telegram']);

    await fake.deliver({ chat: 'dm', from: user, text: 'parcel 1' });
    await until(() => model.requests.some((request) => lastWords(request) === 'parcel 1'), 'the model to be asked', 60_000);
    const stopBegan = Date.now();
    const stopped = gateway.stop();
    // The event: the lease row says it was renewed well after the stop began, past the margin its sends are valid for.
    const leases = createLeaseStore(test.database);
    await until(async () => (await leases.rows()).some((row) => row.channel === 'telegram' && row.releasedAt === null && row.expiresAt.getTime() > stopBegan + 2 * leaseMs), 'the stopping gateway to renew its lease', 12_000);
    letGo();
    await stopped;
    expect(fake.sent().filter((message) => message.chatId === fake.dmChatId(user)).map((message) => message.text)).toEqual(['Heard: parcel 1']);
    // And then it let the account go.
    expect((await leases.rows()).find((row) => row.channel === 'telegram')?.releasedAt).not.toBeNull();
  });
});
