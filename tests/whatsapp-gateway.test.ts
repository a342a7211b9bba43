import { until } from '@roster/channels/testing';
import { channelVariables } from '@roster/channel-registry';
import { linkThrough, startFakeWhatsApp, type FakeWhatsApp } from '@roster/channel-whatsapp/testing';
import { createLogger, parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { pairingHint, type Person } from '@roster/core';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { checkChannels, createLinkedDeviceStore, startGateway, type RunningGateway } from '@roster/gateway';
import { WhatsAppSession } from '@roster/channel-whatsapp';
import { createRuntime, type Runtime } from '@roster/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * WhatsApp end to end through the gateway as `roster start` runs it
 * (startGateway, in process), over a real runtime on PGlite with the offline
 * engine; only WhatsApp's far side is a fake (a socket factory fed through
 * baileys' own event emitter).
 */
let test: TestDatabase;
let roster: Runtime;
let fake: FakeWhatsApp;
let gateway: RunningGateway | undefined;
let ada: Person;
let bob: Person;
const config = parseConfig({ WHATSAPP_ENABLED: 'true', LOG_LEVEL: 'silent' }, channelVariables);
const logger = createLogger(config);

async function start(): Promise<RunningGateway> {
  gateway = await startGateway({
    config,
    database: test.database,
    key: testInstallationKey,
    core: roster.core,
    audit: roster.memory.audit,
    logger: createLogger(config),
    services: { whatsappSocketFactory: fake.socketFactory },
  });
  await until(() => fake.sockets.some((socket) => socket.user !== undefined && !socket.closed), 'the WhatsApp connection');
  return gateway;
}

/** What the bot sent to a chat, once it has sent `count` messages there. */
async function repliesIn(chatId: string, count: number): Promise<string[]> {
  await until(() => fake.sent().filter((message) => message.chatId === chatId).length >= count, `${count} messages to ${chatId}`, 20_000);
  return fake
    .sent()
    .filter((message) => message.chatId === chatId)
    .map((message) => message.text);
}

/** The corrections recorded, as agent/person. */
async function corrections(): Promise<string[]> {
  return test.database.adminScope('test: read learning events', async (tx) => {
    const { rows } = await tx.query<{ agent: string; person: string; kind: string }>(
      `select a.name as agent, p.name as person, e.kind from learning_events e join agents a on a.id = e.agent_id left join people p on p.id = e.person_id where e.kind = 'correction'`,
    );
    return rows.map((row) => `${row.agent}/${row.person}`).sort();
  });
}

beforeAll(async () => {
  test = await openTestDatabase();
  roster = await createRuntime({ config, database: test.database, key: testInstallationKey });
  const directory = roster.core.directory;
  await directory.addAgent({ name: 'Scout', job: 'finds and checks sources' });
  await directory.addAgent({ name: 'Coder', job: 'writes code' });
  ada = await directory.addPerson({ name: 'Ada' });
  bob = await directory.addPerson({ name: 'Bob' });
  await directory.bindChannel({ channel: 'whatsapp', account: 'default', agent: 'Scout', policy: 'pairing' });
  // WhatsApp's session in the database, where the gateway's host keeps it.
  const store = createLinkedDeviceStore(test.database, 'whatsapp', 'default');
  fake = await startFakeWhatsApp({ store, key: testInstallationKey });
  // Linked once, as roster channel add whatsapp does; the gateway then resumes the stored session.
  await linkThrough(fake, { store, key: testInstallationKey });
});
afterAll(async () => {
  await gateway?.stop();
  await fake?.close();
  await test?.cleanup();
});

describe('WhatsApp through the gateway', () => {
  it('links a person with a code, remembers across messages and a restart, keeps a correction to its agent and person, and forgets for every road', async () => {
    await start();
    expect(gateway!.channels).toEqual(['whatsapp']);
    expect(fake.currentQr()).toBeNull();

    // A stranger: the pairing hint, and nothing kept.
    const stranger = fake.user(1);
    await fake.deliver({ chat: 'dm', from: stranger, text: 'remember that my pin is 4321' });
    expect(await repliesIn(fake.dmChatId(stranger), 1)).toEqual([pairingHint()]);

    // Ada links her WhatsApp with a code the owner made for her.
    const { code } = await roster.core.directory.createLinkCode(ada.id);
    const adaPhone = fake.user(2);
    const adaChat = fake.dmChatId(adaPhone);
    await fake.deliver({ chat: 'dm', from: adaPhone, text: `/link ${code}` });
    expect(await repliesIn(adaChat, 1)).toEqual(['Linked: you are Ada here now.']);
    expect(await roster.core.directory.personByIdentity('whatsapp', adaPhone.id)).toMatchObject({ id: ada.id });

    await fake.deliver({ chat: 'dm', from: adaPhone, text: 'remember that my locker is number 12' });
    expect((await repliesIn(adaChat, 2))[1]).toBe('Noted: your locker is number 12');
    await fake.deliver({ chat: 'dm', from: adaPhone, text: 'what do you know about my locker?' });
    expect((await repliesIn(adaChat, 3))[2]).toContain('your locker is number 12');

    // A restart: the gateway resumes the stored WhatsApp session (no QR code) and the memory is still Ada's.
    const socketsBefore = fake.sockets.length;
    await gateway!.stop();
    await start();
    expect(fake.sockets.length).toBe(socketsBefore + 1);
    expect(fake.currentQr()).toBeNull();
    await fake.deliver({ chat: 'dm', from: adaPhone, text: 'what do you know about my locker?' });
    expect((await repliesIn(adaChat, 4))[3]).toContain('your locker is number 12');

    // A correction lands for Scout and Ada, and for no one else.
    const bobPhone = fake.user(3);
    await roster.core.directory.linkIdentity(bob.id, 'whatsapp', bobPhone.id, bobPhone.name);
    await fake.deliver({ chat: 'dm', from: bobPhone, text: 'what do you know about my locker?' });
    expect(await repliesIn(fake.dmChatId(bobPhone), 1)).toEqual(["I don't know anything about your locker yet."]);
    expect(await corrections()).toEqual([]);
    await fake.deliver({ chat: 'dm', from: adaPhone, text: "that's wrong, my locker is number 14" });
    await repliesIn(adaChat, 5);
    // Positive control: it was recorded; negative: under Scout and Ada only, not Coder, not Bob.
    expect(await corrections()).toEqual(['Scout/Ada']);
    // Coder, asked by Ada on WhatsApp, knows nothing of what she told Scout.
    await fake.deliver({ chat: 'dm', from: adaPhone, text: '/agent Coder' });
    expect((await repliesIn(adaChat, 6))[5]).toBe('Now talking to Coder.');
    await fake.deliver({ chat: 'dm', from: adaPhone, text: 'what do you know about my locker?' });
    expect((await repliesIn(adaChat, 7))[6]).toBe("I don't know anything about your locker yet.");
    await fake.deliver({ chat: 'dm', from: adaPhone, text: '/agent Scout' });
    await repliesIn(adaChat, 8);

    // Forget on WhatsApp is forgotten when asked on another road (the web), while what was not forgotten stays.
    await fake.deliver({ chat: 'dm', from: adaPhone, text: 'remember that my bike is green' });
    expect((await repliesIn(adaChat, 9))[8]).toBe('Noted: your bike is green');
    const web = (text: string) => roster.core.handle({ channel: 'web', conversation: { externalId: `web-${ada.id}`, kind: 'dm' }, sender: { personId: ada.id }, text }, { agent: 'Scout' });
    // Positive control: the web road knows it before the forget.
    expect((await web('what do you know about my bike?')).replies[0]?.text).toContain('your bike is green');
    await fake.deliver({ chat: 'dm', from: adaPhone, text: 'forget that my bike is green' });
    expect((await repliesIn(adaChat, 10))[9]).toBe('Forgotten.');
    expect((await web('what do you know about my bike?')).replies[0]?.text).toBe("I don't know anything about your bike yet.");
    expect((await web('what do you know about my locker?')).replies[0]?.text).toContain('your locker is number 14');
    const kept = await test.database.adminScope('test: what is kept of the bike', async (tx) => ({
      facts: (await tx.query(`select 1 from facts where content like '%bike%'`)).rows.length,
      messages: (await tx.query(`select 1 from messages where content like '%bike is green%'`)).rows.length,
      tombstones: (await tx.query(`select 1 from tombstones where person_id = $1`, [ada.id])).rows.length,
      stranger: (await tx.query(`select 1 from messages where content like '%4321%'`)).rows.length,
    }));
    expect(kept).toEqual({ facts: 0, messages: 0, tombstones: 1, stranger: 0 });

    // What it answered it marked read, in every chat it answered in.
    const read = new Set(fake.reads().map((key) => key.remoteJid));
    expect(read).toEqual(new Set([fake.dmChatId(stranger), adaChat, fake.dmChatId(bobPhone)]));
  });

  it('is reported by the doctor as linked, waiting for a scan, or logged out with the number to link again', async () => {
    const store = new WhatsAppSession(createLinkedDeviceStore(test.database, 'whatsapp', 'default'), testInstallationKey);
    const check = async () => (await checkChannels(config, { database: test.database, logger })).find((entry) => entry.channel === 'whatsapp');
    // The link, and which gateway holds the linked device now.
    // Ok while a gateway receives it; a linked number nobody receives fails, and says so.
    const linked = await check();
    expect(linked?.detail).toMatch(/^linked as \+4915550000000; (received by \S+ since \S+|nobody receives it: .+)$/);
    expect(linked?.status).toBe(linked?.detail.includes('; received by ') === true ? 'ok' : 'fail');
    // The phone removes the device while the gateway runs: recorded, and reported.
    await gateway?.stop();
    await start();
    fake.logOut();
    await until(async () => (await store.read())?.status === 'logged_out', 'the logout to be recorded');
    expect(await check()).toEqual({ channel: 'whatsapp', status: 'fail', detail: 'logged out (was +4915550000000): the phone removed this device; re-link with roster channel add whatsapp' });
    // A new pairing (roster channel add whatsapp) shows a code: the doctor says it waits; once it expired, that it did.
    expect(await store.showQr('https://wa.me/settings/linked_devices#2@ref,a,b,c,1')).toBe(true);
    expect(await check()).toEqual({ channel: 'whatsapp', status: 'fail', detail: 'waiting for a scan: scan the QR code on the Channels page, or run roster channel add whatsapp' });
    await store.pairingEnded();
    expect(await check()).toEqual({ channel: 'whatsapp', status: 'fail', detail: 'not linked: no phone scanned the QR code in time; run roster channel add whatsapp' });
    expect((await checkChannels(parseConfig({}, channelVariables), { database: test.database, logger })).find((entry) => entry.channel === 'whatsapp')).toMatchObject({ status: 'off' });
  });
});
