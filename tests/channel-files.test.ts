import { randomBytes } from 'node:crypto';
import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { serveChannel, type ServedChannel } from '@roster/channel-host';
import { until, type FakePlatform } from '@roster/channels/testing';
import { maxFileBytes, type Core } from '@roster/core';
import type { Database } from '@roster/db';
import { openTestDatabase } from '@roster/db/testing';
import { createLinkedDeviceStore } from '@roster/gateway';
import { createRuntime } from '@roster/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeDiscord, type FakeDiscord } from '@roster/channel-discord/testing';
import { startFakeSlack, type FakeSlack } from '@roster/channel-slack/testing';
import { startFakeTelegram, type FakeTelegram } from '@roster/channel-telegram/testing';
import { linkThrough, startFakeWhatsApp, type FakeWhatsApp } from '@roster/channel-whatsapp/testing';
import { startFakeOpenAi, type FakeRequest } from './support/fake-openai.js';

/**
 * An image or a voice note sent on a channel reaches an agent whose engine
 * reads it, as a content part of the current message only; an agent whose
 * engine does not read it says so plainly. Over the real Telegram, Slack,
 * Discord and WhatsApp adapters against local fakes of their APIs (WhatsApp's
 * media encrypted with baileys' own encryption and served as its media
 * servers serve it), the real runtime on PGlite,
 * and a local fake of the OpenAI API that keeps every request as it arrived.
 */
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** The reply of the model that reads images: whether the request carried one. */
function describeRequest(request: FakeRequest): { text: string } {
  const images = request.parts.filter((part) => part.type === 'image_url');
  return { text: images.length === 0 ? 'I got words only.' : `I see ${images.length} picture(s).` };
}

/** `platform`, or one made over the test's database (WhatsApp keeps its session there). */
async function setUp<Platform extends FakePlatform>(given: Platform | ((database: Database) => Promise<Platform>)) {
  const model = await startFakeOpenAi(describeRequest);
  cleanups.push(() => model.close());
  const test = await openTestDatabase();
  cleanups.push(() => test.cleanup());
  const platform = typeof given === 'function' ? await given(test.database) : given;
  const runtime = await createRuntime({ config: parseConfig({}), database: test.database, key: testInstallationKey });
  const { directory } = runtime.core;
  // Seer runs on a model that reads images; Scout on the offline engine, which reads text only.
  await directory.addAgent({ name: 'Seer', job: 'looks at pictures', engine: model.engine });
  await directory.addAgent({ name: 'Scout', job: 'finds and checks sources' });
  const person = await directory.addPerson({ name: 'Pia' });
  const user = platform.user(1);
  await directory.linkIdentity(person.id, platform.adapter.channel, user.id, user.name);
  const served: ServedChannel = await serveChannel({ adapter: platform.adapter, core: runtime.core, streaming: false });
  cleanups.push(() => served.stop());
  return { model, database: test.database, core: runtime.core, user, served, platform };
}

/** WhatsApp's far side over `database`, linked as roster channel add whatsapp links it. */
async function linkedWhatsApp(database: Database): Promise<FakeWhatsApp> {
  const store = createLinkedDeviceStore(database, 'whatsapp', 'default');
  const whatsapp = await startFakeWhatsApp({ store, key: testInstallationKey });
  cleanups.push(() => whatsapp.close());
  await linkThrough(whatsapp, { store, key: testInstallationKey });
  whatsapp.adapter = whatsapp.makeAdapter();
  return whatsapp;
}

/** What the bot sent to this person's chat, in order. */
const sentTo = (platform: FakePlatform, chatId: string) => platform.sent().filter((message) => message.chatId === chatId).map((message) => message.text);

/** Every column, of every table, that holds `needle` (as text, or as bytes): "table.column" → rows. */
async function holding(database: Database, needle: string, bytes: Uint8Array): Promise<Record<string, number>> {
  return database.ownerScope('test: look for file bytes in every column', async (tx) => {
    const { rows: columns } = await tx.query<{ table_name: string; column_name: string; data_type: string }>(
      `select c.table_name, c.column_name, c.data_type from information_schema.columns c
       join information_schema.tables t on t.table_name = c.table_name and t.table_schema = c.table_schema
       where c.table_schema = 'public' and t.table_type = 'BASE TABLE'
         and c.data_type in ('text', 'character varying', 'json', 'jsonb', 'ARRAY', 'USER-DEFINED', 'bytea')`,
    );
    const found: Record<string, number> = {};
    for (const column of columns) {
      const { rows } =
        column.data_type === 'bytea'
          ? await tx.query<{ n: string }>(`select count(*) as n from ${column.table_name} where position($1::bytea in ${column.column_name}) > 0`, [Buffer.from(bytes)])
          : await tx.query<{ n: string }>(`select count(*) as n from ${column.table_name} where position($1 in ${column.column_name}::text) > 0`, [needle]);
      const count = Number(rows[0]!.n);
      if (count > 0) found[`${column.table_name}.${column.column_name}`] = count;
    }
    return found;
  });
}

async function personMessages(database: Database): Promise<string[]> {
  return database.adminScope('test: read what people said', async (tx) => {
    const { rows } = await tx.query<{ content: string }>(`select content from messages where role = 'person' order by created_at, id`);
    return rows.map((row) => row.content);
  });
}

describe('files on Telegram', () => {
  it('a photo with a caption reaches the agent that reads images as an image part, and the agent that does not says so plainly', async () => {
    const telegram: FakeTelegram = await startFakeTelegram();
    cleanups.push(() => telegram.close());
    const { model, database, user, served } = await setUp(telegram);
    const chat = telegram.dmChatId(user);
    await telegram.command(user, 'dm', 'team');
    await until(() => sentTo(telegram, chat).length === 1, 'the team answer');

    const photo = randomBytes(3000);
    const base64 = photo.toString('base64');
    await telegram.deliver({ chat: 'dm', from: user, text: 'what is on this label?', attachment: { kind: 'image', data: photo, mediaType: 'image/jpeg' } });
    await until(() => sentTo(telegram, chat).length === 3, 'both replies', 20_000);
    await served.settled();

    // Side by side in one turn: Seer read the picture, Scout (offline) said it cannot.
    const replies = sentTo(telegram, chat).slice(1);
    expect(replies).toContain('Seer: I see 1 picture(s).');
    expect(replies).toContain('Scout: I cannot read images here, only text: tell me in words what it holds, please.');
    // The largest size of the photo went to the model, whole, beside the caption, in the current message.
    expect(model.requests).toHaveLength(1);
    const parts = model.requests[0]!.parts;
    expect(parts.filter((part) => part.type === 'text').map((part) => part.text)).toEqual(['what is on this label?']);
    expect(parts.filter((part) => part.type === 'image_url').map((part) => (part.image_url as { url: string }).url)).toEqual([`data:image/jpeg;base64,${base64}`]);
    expect(telegram.calls.filter((call) => call === 'getFile')).toHaveLength(1);
    expect(telegram.downloads()).toHaveLength(1);

    // The words are kept with a marker; the bytes nowhere.
    expect(await personMessages(database)).toEqual(['/team', 'what is on this label?\n[an image]']);
    expect(await holding(database, base64.slice(0, 64), photo.subarray(0, 64))).toEqual({});
    // The scan finds what is kept (the control): the caption, in the messages.
    expect(await holding(database, 'what is on this label', photo.subarray(0, 64))).toMatchObject({ 'messages.content': 1 });

    // The next turn's history carries the marker, never the image again.
    await telegram.deliver({ chat: 'dm', from: user, text: 'thanks' });
    await until(() => sentTo(telegram, chat).length === 5, 'the replies to thanks', 20_000);
    expect(model.requests).toHaveLength(2);
    const later = JSON.stringify(model.requests[1]!.messages);
    expect(later).toContain('[an image]');
    expect(later).not.toContain(base64.slice(0, 64));
    expect(model.requests[1]!.parts.map((part) => part.type)).toEqual(['text']);
  });

  it('a photo without words still reaches the agent; a voice note is answered plainly by agents that cannot hear it', async () => {
    const telegram = await startFakeTelegram();
    cleanups.push(() => telegram.close());
    const { model, database, user, served } = await setUp(telegram);
    const chat = telegram.dmChatId(user);
    await telegram.command(user, 'dm', 'agent Seer');
    await until(() => sentTo(telegram, chat).length === 1, 'the switch');

    // A photo alone (no caption): the image part, with no text part.
    const photo = randomBytes(2000);
    await telegram.deliver({ chat: 'dm', from: user, text: '', attachment: { kind: 'image', data: photo, mediaType: 'image/jpeg' } });
    await until(() => sentTo(telegram, chat).length === 2, 'the reply to the photo', 20_000);
    expect(sentTo(telegram, chat)[1]).toBe('I see 1 picture(s).');
    expect(model.requests[0]!.parts.map((part) => part.type)).toEqual(['image_url']);

    // A voice note: no engine here reads sound, so the model is not called and the person is told.
    const voice = randomBytes(4000);
    await telegram.deliver({ chat: 'dm', from: user, text: '', attachment: { kind: 'voice', data: voice, mediaType: 'audio/ogg' } });
    await until(() => sentTo(telegram, chat).length === 3, 'the reply to the voice note', 20_000);
    expect(sentTo(telegram, chat)[2]).toBe('I cannot read voice notes or audio here, only text: say it in words, please.');
    expect(model.requests).toHaveLength(1);
    // The same voice note to Scout (offline): the same plain answer.
    await telegram.command(user, 'dm', 'agent Scout');
    await telegram.deliver({ chat: 'dm', from: user, text: '', attachment: { kind: 'voice', data: voice, mediaType: 'audio/ogg' } });
    await until(() => sentTo(telegram, chat).length === 5, 'Scout on the voice note', 20_000);
    expect(sentTo(telegram, chat)[4]).toBe('I cannot read voice notes or audio here, only text: say it in words, please.');
    await served.settled();

    expect(await personMessages(database)).toEqual(['/agent Seer', '[an image]', '[an audio clip]', '/agent Scout', '[an audio clip]']);
    expect(await holding(database, photo.toString('base64').slice(0, 64), photo.subarray(0, 64))).toEqual({});
    expect(await holding(database, voice.toString('base64').slice(0, 64), voice.subarray(0, 64))).toEqual({});
  });

  it('refuses a file over the limit with a plain sentence, fetches and keeps nothing; a small one beside it goes through (the control)', async () => {
    const telegram = await startFakeTelegram();
    cleanups.push(() => telegram.close());
    const { model, database, user, served } = await setUp(telegram);
    const chat = telegram.dmChatId(user);
    await telegram.command(user, 'dm', 'agent Seer');
    await until(() => sentTo(telegram, chat).length === 1, 'the switch');
    const before = await personMessages(database);

    const huge = new Uint8Array(maxFileBytes + 1024);
    await telegram.deliver({ chat: 'dm', from: user, text: 'look at this scan', attachment: { kind: 'image', data: huge, mediaType: 'image/jpeg' } });
    await until(() => sentTo(telegram, chat).length === 2, 'the refusal', 20_000);
    await served.settled();
    expect(sentTo(telegram, chat)[1]).toBe('That image is too large: the most Roster takes is 10 MB. Nothing was kept; send a smaller one.');
    expect(telegram.downloads()).toEqual([]);
    expect(telegram.calls).not.toContain('getFile');
    expect(model.requests).toEqual([]);
    expect(await personMessages(database)).toEqual(before);

    // A document of the same kind under the limit: fetched, read, kept as a marker.
    const small = randomBytes(1500);
    await telegram.deliver({ chat: 'dm', from: user, text: 'and this one', attachment: { kind: 'document', data: small, mediaType: 'image/png', name: 'scan.png' } });
    await until(() => sentTo(telegram, chat).length === 3, 'the reply', 20_000);
    expect(sentTo(telegram, chat)[2]).toBe('I see 1 picture(s).');
    expect(await personMessages(database)).toEqual([...before, 'and this one\n[an image]']);
  });
});

describe('files on Slack', () => {
  it('a shared image is fetched with the bot token and reaches the agent that reads images', async () => {
    const slack: FakeSlack = await startFakeSlack();
    cleanups.push(() => slack.close());
    const { model, database, user, served } = await setUp(slack);
    const chat = slack.dmChatId(user);
    await slack.command(user, 'dm', 'agent Seer');
    await until(() => sentTo(slack, chat).length === 1 || slack.pressAnswers().length === 1, 'the switch');

    const photo = randomBytes(2500);
    await slack.deliver({ chat: 'dm', from: user, text: 'which bird is this?', attachment: { kind: 'image', data: photo, mediaType: 'image/jpeg', name: 'bird.jpg' } });
    await until(() => sentTo(slack, chat).includes('I see 1 picture(s).'), 'the reply', 20_000);
    await served.settled();
    expect(slack.downloads()).toHaveLength(1);
    expect(model.requests[0]!.parts.find((part) => part.type === 'image_url')?.image_url).toEqual({ url: `data:image/jpeg;base64,${photo.toString('base64')}` });
    expect((await personMessages(database)).at(-1)).toBe('which bird is this?\n[an image]');
    expect(await holding(database, photo.toString('base64').slice(0, 64), photo.subarray(0, 64))).toEqual({});
  });
});

describe('files on Discord', () => {
  it('an attachment is fetched from its address and reaches the agent that reads images; its bytes are not kept', async () => {
    const discord: FakeDiscord = await startFakeDiscord();
    cleanups.push(() => discord.close());
    const { model, database, user, served } = await setUp(discord);
    const chat = discord.dmChatId(user);
    await discord.command(user, 'dm', 'agent Seer');
    await until(() => sentTo(discord, chat).length === 1, 'the switch');

    const photo = randomBytes(2500);
    await discord.deliver({ chat: 'dm', from: user, text: 'which bird is this?', attachment: { kind: 'image', data: photo, mediaType: 'image/jpeg', name: 'bird.jpg' } });
    await until(() => sentTo(discord, chat).includes('I see 1 picture(s).'), 'the reply', 20_000);
    await served.settled();
    expect(discord.downloads()).toHaveLength(1);
    expect(model.requests[0]!.parts.find((part) => part.type === 'image_url')?.image_url).toEqual({ url: `data:image/jpeg;base64,${photo.toString('base64')}` });
    expect((await personMessages(database)).at(-1)).toBe('which bird is this?\n[an image]');
    expect(await holding(database, photo.toString('base64').slice(0, 64), photo.subarray(0, 64))).toEqual({});
  });
});

describe('files on WhatsApp', () => {
  it('an image is fetched from the media server, opened with its message’s key, and reaches the agent that reads images; a voice note is answered plainly; the bytes are kept nowhere', async () => {
    const { model, database, user, served, platform: whatsapp } = await setUp(linkedWhatsApp);
    const chat = whatsapp.dmChatId(user);
    await whatsapp.command(user, 'dm', 'agent Seer');
    await until(() => sentTo(whatsapp, chat).length === 1, 'the switch');

    const photo = randomBytes(2500);
    const base64 = photo.toString('base64');
    await whatsapp.deliver({ chat: 'dm', from: user, text: 'which bird is this?', attachment: { kind: 'image', data: photo, mediaType: 'image/jpeg' } });
    await until(() => sentTo(whatsapp, chat).length === 2, 'the reply to the photo', 20_000);
    await served.settled();
    expect(sentTo(whatsapp, chat)[1]).toBe('I see 1 picture(s).');
    expect(whatsapp.downloads()).toHaveLength(1);
    expect(model.requests[0]!.parts.find((part) => part.type === 'image_url')?.image_url).toEqual({ url: `data:image/jpeg;base64,${base64}` });
    expect(model.requests[0]!.parts.filter((part) => part.type === 'text').map((part) => part.text)).toEqual(['which bird is this?']);

    // A voice note (Opus in Ogg): fetched and opened, but no engine here hears it, so the model is not called and the person is told.
    const voice = randomBytes(4000);
    await whatsapp.deliver({ chat: 'dm', from: user, text: '', attachment: { kind: 'voice', data: voice, mediaType: 'audio/ogg' } });
    await until(() => sentTo(whatsapp, chat).length === 3, 'the reply to the voice note', 20_000);
    await served.settled();
    expect(sentTo(whatsapp, chat)[2]).toBe('I cannot read voice notes or audio here, only text: say it in words, please.');
    expect(whatsapp.downloads()).toHaveLength(2);
    expect(model.requests).toHaveLength(1);

    // The words are kept with a marker; the bytes nowhere (the caption, found by the same scan, is the control).
    expect((await personMessages(database)).slice(-2)).toEqual(['which bird is this?\n[an image]', '[an audio clip]']);
    expect(await holding(database, base64.slice(0, 64), photo.subarray(0, 64))).toEqual({});
    expect(await holding(database, voice.toString('base64').slice(0, 64), voice.subarray(0, 64))).toEqual({});
    expect(await holding(database, 'which bird is this', photo.subarray(0, 64))).toMatchObject({ 'messages.content': 1 });
  });

  it('refuses an image over the limit before fetching it, tells the person plainly when WhatsApp no longer has one, and keeps nothing; a good one after is read (the control)', async () => {
    const { model, database, user, served, platform: whatsapp } = await setUp(linkedWhatsApp);
    const chat = whatsapp.dmChatId(user);
    await whatsapp.command(user, 'dm', 'agent Seer');
    await until(() => sentTo(whatsapp, chat).length === 1, 'the switch');
    const before = await personMessages(database);

    await whatsapp.deliver({ chat: 'dm', from: user, text: 'look at this scan', attachment: { kind: 'image', data: new Uint8Array(maxFileBytes + 1024), mediaType: 'image/jpeg' } });
    await until(() => sentTo(whatsapp, chat).length === 2, 'the refusal', 20_000);
    await served.settled();
    expect(sentTo(whatsapp, chat)[1]).toBe('That image is too large: the most Roster takes is 10 MB. Nothing was kept; send a smaller one.');
    expect(whatsapp.downloads()).toEqual([]);

    // An image whose copy WhatsApp's media server no longer keeps (it answers 410).
    const media = await whatsapp.upload(randomBytes(1800), 'image');
    whatsapp.expire(media.directPath);
    await whatsapp.deliverContent(user, { imageMessage: { ...media, mimetype: 'image/jpeg', caption: 'and this one?' } });
    await until(() => sentTo(whatsapp, chat).length === 3, 'the answer to the expired image', 20_000);
    await served.settled();
    expect(sentTo(whatsapp, chat)[2]).toBe("WhatsApp no longer has that image (its copy expired on WhatsApp's servers); send it again.");
    expect(model.requests).toEqual([]);
    expect(await personMessages(database)).toEqual(before);

    const small = randomBytes(1500);
    await whatsapp.deliver({ chat: 'dm', from: user, text: 'and this one', attachment: { kind: 'document', data: small, mediaType: 'image/png', name: 'scan.png' } });
    await until(() => sentTo(whatsapp, chat).length === 4, 'the reply', 20_000);
    expect(sentTo(whatsapp, chat)[3]).toBe('I see 1 picture(s).');
    expect(await personMessages(database)).toEqual([...before, 'and this one\n[an image]']);
  });
});

describe('files at the core', () => {
  it('refuses an oversized or malformed file with a clear error and stores nothing; a file within bounds is taken (the control)', async () => {
    const test = await openTestDatabase();
    cleanups.push(() => test.cleanup());
    const runtime = await createRuntime({ config: parseConfig({}), database: test.database, key: testInstallationKey });
    const core: Core = runtime.core;
    await core.directory.addAgent({ name: 'Scout', job: 'finds and checks sources' });
    const person = await core.directory.addPerson({ name: 'Pia' });
    const inbound = (files: unknown) => ({
      channel: 'cli' as const,
      conversation: { externalId: 'files', kind: 'dm' as const },
      sender: { personId: person.id },
      text: '',
      files: files as never,
    });

    await expect(core.handle(inbound([{ kind: 'image', mediaType: 'image/png', data: new Uint8Array(maxFileBytes + 1) }]))).rejects.toThrow(
      'An image of 10.1 MB is too large: the most is 10 MB. Send a smaller one.',
    );
    await expect(core.handle(inbound([{ kind: 'video', mediaType: 'video/mp4', data: new Uint8Array(8) }]))).rejects.toThrow("A file's kind is one of image, audio, file.");
    await expect(core.handle(inbound([{ kind: 'image', mediaType: 'a picture', data: new Uint8Array(8) }]))).rejects.toThrow('The media type of an image must look like image/jpeg.');
    await expect(core.handle(inbound([]))).rejects.toThrow('message is empty');
    expect(await personMessages(test.database)).toEqual([]);

    const result = await core.handle(inbound([{ kind: 'image', mediaType: 'image/png', data: new Uint8Array([1, 2, 3]) }]));
    expect(result.replies.map((reply) => reply.text)).toEqual(['I cannot read images here, only text: say it in words, please.']);
    expect(await personMessages(test.database)).toEqual(['[an image]']);
  });
});
