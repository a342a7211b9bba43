import { serveChannel, type ServedChannel } from '@roster/channel-host';
import { until } from '@roster/channels/testing';
import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { createLinkedDeviceStore } from '@roster/gateway';
import { createRuntime, type Runtime } from '@roster/runtime';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeDiscord, type FakeDiscord } from '@roster/channel-discord/testing';
import { startFakeSlack, type FakeSlack } from '@roster/channel-slack/testing';
import { startFakeTelegram, type FakeTelegram } from '@roster/channel-telegram/testing';
import { telegramSecretHeader } from '@roster/channel-telegram';
import { discordKinds, isRecord, notLinked, postSigned, shown, slackKinds, telegramKinds, whatsappKinds } from './support/hostile-channel-values.js';
import { linkThrough, startFakeWhatsApp, type FakeWhatsApp } from '@roster/channel-whatsapp/testing';

/**
 * Hostile inbound payloads on every channel, generated with fast-check and
 * served through serveChannel against a real runtime: Slack events over HTTP
 * (Bolt's receiver, each body correctly signed), Telegram updates through the
 * webhook entry (with the right secret) and through long polling (the fake
 * Bot API's getUpdates), Discord gateway events (MESSAGE_CREATE,
 * INTERACTION_CREATE and others, over the fake gateway's WebSocket, read by
 * the real discord.js client), WhatsApp `messages.upsert` events emitted
 * through baileys' own event emitter to the real adapter (proto-like
 * messages and media messages with wrong types and missing keys). Random JSON, message- and button-shaped objects with
 * wrong types, NUL bytes, lone surrogates, oversized texts, JSON nested
 * 10,000 deep, bytes that are no UTF-8. Expected: nothing thrown out of the
 * process, no 500 from a webhook entry, nothing stored (none of it is a
 * message from a linked person), and a linked person's message answered
 * afterwards on each channel.
 */
let test: TestDatabase;
let roster: Runtime;
let slack: FakeSlack;
let telegramHook: FakeTelegram;
let telegramPoll: FakeTelegram;
let discord: FakeDiscord;
let whatsapp: FakeWhatsApp;
const served: ServedChannel[] = [];
const escaped: unknown[] = [];
const onEscape = (error: unknown) => escaped.push(error);
/** Cases run, by channel and kind, printed at the end. */
const cases = new Map<string, Map<string, number>>();

const slackRuns = 10;
const webhookRuns = 30;
const pollingRuns = 12;
const gatewayRuns = 15;
const upsertRuns = 25;

function count(subject: string, kind: string): void {
  const kinds = cases.get(subject) ?? new Map<string, number>();
  kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  cases.set(subject, kinds);
}

/** The rows of every table, by table. */
function tableRows(): Promise<Record<string, number>> {
  return test.database.adminScope('test: count the rows of every table', async (tx) => {
    const { rows: tables } = await tx.query<{ name: string }>(
      `select quote_ident(schemaname) || '.' || quote_ident(tablename) as name from pg_tables where schemaname not in ('pg_catalog', 'information_schema') order by 1`,
    );
    const { rows } = await tx.query<{ name: string; n: number }>(tables.map((table) => `select '${table.name}' as name, count(*)::int as n from ${table.name}`).join(' union all '));
    return Object.fromEntries(rows.map((row) => [row.name, Number(row.n)]));
  });
}

const settled = () => Promise.all(served.map((channel) => channel.settled()));

// ---------------------------------------------------------------------------

beforeAll(async () => {
  process.on('unhandledRejection', onEscape);
  process.on('uncaughtException', onEscape);
  test = await openTestDatabase();
  roster = await createRuntime({ config: parseConfig({ LOG_LEVEL: 'silent' }), database: test.database, key: testInstallationKey });
  const { directory } = roster.core;
  await directory.addAgent({ name: 'Scout', job: 'finds things' });
  const ada = await directory.addPerson({ name: 'Ada' });
  await directory.bindChannel({ channel: 'slack', agent: 'Scout' });
  await directory.bindChannel({ channel: 'telegram', agent: 'Scout' });
  await directory.bindChannel({ channel: 'discord', agent: 'Scout' });
  await directory.bindChannel({ channel: 'whatsapp', agent: 'Scout' });

  slack = await startFakeSlack();
  telegramHook = await startFakeTelegram({ webhook: true });
  telegramPoll = await startFakeTelegram();
  discord = await startFakeDiscord();
  const whatsappStore = createLinkedDeviceStore(test.database, 'whatsapp', 'default');
  whatsapp = await startFakeWhatsApp({ store: whatsappStore, key: testInstallationKey });
  await linkThrough(whatsapp, { store: whatsappStore, key: testInstallationKey });
  whatsapp.adapter = whatsapp.makeAdapter();
  await directory.linkIdentity(ada.id, 'slack', slack.user(1).id);
  await directory.linkIdentity(ada.id, 'telegram', telegramHook.user(2).id);
  await directory.linkIdentity(ada.id, 'discord', discord.user(2).id);
  await directory.linkIdentity(ada.id, 'whatsapp', whatsapp.user(2).id);
  for (const adapter of [slack.adapter, telegramHook.adapter, telegramPoll.adapter, discord.adapter, whatsapp.adapter]) served.push(await serveChannel({ adapter, core: roster.core }));
  await until(() => whatsapp.sockets.some((socket) => socket.user !== undefined && !socket.closed), 'the WhatsApp connection');

  // A stranger's message bumps the day's count of refusals (one row per channel and day, no words): made here, before the counts are taken.
  await slack.deliver({ chat: 'dm', from: slack.user(9), text: 'hello' });
  await telegramHook.deliver({ chat: 'dm', from: telegramHook.user(9), text: 'hello' });
  await discord.deliver({ chat: 'dm', from: discord.user(9), text: 'hello' });
  await whatsapp.deliver({ chat: 'dm', from: whatsapp.user(9), text: 'hello' });
  await settled();
});

afterAll(async () => {
  const lines = [...cases].map(([subject, kinds]) => `${subject}: ${[...kinds].map(([kind, n]) => `${kind} ${n}`).join(', ')}`);
  const total = [...cases.values()].reduce((sum, kinds) => sum + [...kinds.values()].reduce((a, b) => a + b, 0), 0);
  console.log(`hostile channel payloads run (${total} in all):\n${lines.join('\n')}`);
  for (const channel of served) await channel.stop();
  await slack?.close();
  await telegramHook?.close();
  await telegramPoll?.close();
  await discord?.close();
  await whatsapp?.close();
  await test?.cleanup();
  process.off('unhandledRejection', onEscape);
  process.off('uncaughtException', onEscape);
});

describe('hostile inbound payloads on every channel', () => {
  it('Slack events over HTTP, correctly signed: no 500, nothing thrown, nothing stored', async () => {
    const rows = await tableRows();
    const ada = slack.user(1).id;
    // Bolt answers a request no listener takes after three seconds: the kinds run side by side.
    await Promise.all(
      Object.entries(slackKinds(slack)).map(([kind, arbitrary]) =>
        fc.assert(
          fc.asyncProperty(arbitrary.filter((request) => !request.body.includes(ada)), async (request) => {
            count('slack events (HTTP)', kind);
            const status = await postSigned(slack, request);
            expect(status, `${kind}: ${request.body.toString('latin1').slice(0, 200)}`).toBeLessThan(500);
          }),
          { numRuns: slackRuns },
        ),
      ),
    );
    await settled();
    expect(await tableRows()).toEqual(rows);
    expect(escaped).toEqual([]);
  });

  it('Telegram updates through the webhook entry, with the right secret: never a 500, nothing thrown, nothing stored', async () => {
    const rows = await tableRows();
    const secret = telegramHook.webhook()!.secretToken!;
    const ada = telegramHook.user(2).id;
    for (const [kind, arbitrary] of Object.entries(telegramKinds([1_000, 10_000]))) {
      await fc.assert(
        fc.asyncProperty(arbitrary.filter(notLinked(ada)), async (update) => {
          count('telegram webhook', kind);
          const status = await telegramHook.adapter.handleWebhook({ headers: { [telegramSecretHeader]: secret }, body: update });
          expect([200, 400], `${kind}: ${shown(update)}`).toContain(status);
        }),
        { numRuns: webhookRuns },
      );
      await settled();
      expect(await tableRows(), kind).toEqual(rows);
    }
    expect(escaped).toEqual([]);
  });

  it('Telegram updates through long polling (getUpdates): nothing thrown, nothing stored, polling goes on', async () => {
    const rows = await tableRows();
    const ada = telegramPoll.user(2).id;
    // The fake Bot API writes getUpdates' answer with JSON.stringify, which recurses: 1,000 deep is what it sends here.
    for (const [kind, arbitrary] of Object.entries(telegramKinds([1_000]))) {
      await fc.assert(
        fc.asyncProperty(arbitrary.filter(isRecord).filter(notLinked(ada)), async (update) => {
          count('telegram polling', kind);
          // Resolves once getUpdates has handed it out.
          await telegramPoll.push(update);
        }),
        { numRuns: pollingRuns },
      );
      await settled();
      expect(await tableRows(), kind).toEqual(rows);
    }
    expect(escaped).toEqual([]);
  });

  it('Discord gateway events, read by discord.js: nothing thrown, nothing stored, the connection goes on', async () => {
    const rows = await tableRows();
    const ada = discord.user(2).id;
    for (const [kind, arbitrary] of Object.entries(discordKinds(discord))) {
      await fc.assert(
        fc.asyncProperty(arbitrary.filter(notLinked(ada)), async (event) => {
          count('discord gateway', kind);
          // Resolves once the client has handled it (its heartbeat reports the event's sequence).
          await discord.dispatch(event.type, event.data);
        }),
        { numRuns: gatewayRuns },
      );
      await settled();
      expect(await tableRows(), kind).toEqual(rows);
    }
    expect(discord.sessions()).toBe(1);
    expect(escaped).toEqual([]);
  });

  it('WhatsApp messages.upsert events through baileys’ emitter: nothing thrown out of the handler, nothing stored, the connection goes on', async () => {
    const rows = await tableRows();
    const ada = whatsapp.user(2).id.slice(1);
    const sockets = whatsapp.sockets.length;
    for (const [kind, arbitrary] of Object.entries(whatsappKinds(whatsapp))) {
      await fc.assert(
        fc.asyncProperty(arbitrary.filter(notLinked(ada)), async (data) => {
          count('whatsapp messages.upsert', kind);
          // The emitter calls the adapter's listener there and then: what it throws would come out here.
          expect(() => whatsapp.upsert(data), `${kind}: ${shown(data)}`).not.toThrow();
        }),
        { numRuns: upsertRuns },
      );
      await settled();
      expect(await tableRows(), kind).toEqual(rows);
    }
    // The same socket, still open: nothing made it reconnect.
    expect(whatsapp.sockets).toHaveLength(sockets);
    expect(whatsapp.sockets.at(-1)!.closed).toBe(false);
    expect(escaped).toEqual([]);
  });

  it('still answers a linked person on each channel afterwards', async () => {
    const before = await tableRows();
    const question = 'what do you know about my desk?';
    const answer = "I don't know anything about your desk yet.";
    const ada = slack.user(1);
    await slack.deliver({ chat: 'dm', from: ada, text: question });
    await settled();
    expect(slack.sent().filter((message) => message.chatId === slack.dmChatId(ada)).map((message) => message.text)).toEqual([answer]);

    const adaOnTelegram = telegramHook.user(2);
    await telegramHook.deliver({ chat: 'dm', from: adaOnTelegram, text: question });
    await settled();
    expect(telegramHook.sent().filter((message) => message.chatId === telegramHook.dmChatId(adaOnTelegram)).map((message) => message.text)).toEqual([answer]);

    const adaOnDiscord = discord.user(2);
    await discord.deliver({ chat: 'dm', from: adaOnDiscord, text: question });
    await settled();
    expect(discord.sent().filter((message) => message.chatId === discord.dmChatId(adaOnDiscord)).map((message) => message.text)).toEqual([answer]);

    const adaOnWhatsApp = whatsapp.user(2);
    await whatsapp.deliver({ chat: 'dm', from: adaOnWhatsApp, text: question });
    await settled();
    expect(whatsapp.sent().filter((message) => message.chatId === whatsapp.dmChatId(adaOnWhatsApp)).map((message) => message.text)).toEqual([answer]);

    // Long polling still takes updates: a stranger gets the pairing hint.
    const stranger = telegramPoll.user(7);
    await telegramPoll.deliver({ chat: 'dm', from: stranger, text: 'hello?' });
    await until(async () => {
      await settled();
      return telegramPoll.sent().some((message) => message.chatId === telegramPoll.dmChatId(stranger));
    }, 'the pairing hint over long polling');
    // Positive control for the counts above: a linked person's messages are kept.
    expect((await tableRows())['public.messages']).toBeGreaterThan(before['public.messages']!);
    expect(escaped).toEqual([]);
  });
});
