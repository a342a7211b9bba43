import { WhatsAppSession } from '@roster/channel-whatsapp';
import { testInstallationKey } from '@roster/config/testing';
import { createLinkedDeviceStore } from '@roster/gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer, type Browser } from './support/api-server.js';

/** GET /api/channels/whatsapp/link through the real server, over the session as the gateway stores it. */
let server: ApiServer;
let owner: Browser;
let member: Browser;
let store: WhatsAppSession;
const qr = 'https://wa.me/settings/linked_devices#2@pairing-reference,bm9pc2U=,aWRlbnRpdHk=,YWR2LXNlY3JldA==,1';

beforeAll(async () => {
  server = await startApiServer({ WHATSAPP_ENABLED: 'true' });
  const { directory } = server.runtime.core;
  owner = await server.signIn(await directory.addPerson({ name: 'Ada', role: 'owner' }));
  member = await server.signIn(await directory.addPerson({ name: 'Bob', role: 'member' }));
  store = new WhatsAppSession(createLinkedDeviceStore(server.test.database, 'whatsapp', 'default'), testInstallationKey);
});
afterAll(async () => {
  await server?.close();
});

const link = async (as: Browser = owner, channel = 'whatsapp') => server.request('GET', `/api/channels/${channel}/link`, { as });

describe('WhatsApp’s link on the API', () => {
  it('walks the owner through the link: not linked, a QR code to scan, linked as the number, logged out', async () => {
    const none = await link();
    expect(none.statusCode, none.body).toBe(200);
    expect(none.json()).toMatchObject({ channel: 'whatsapp', configured: true, account: 'default', status: 'not_linked', who: null, codeSvg: null, updatedAt: null });
    expect(none.json().detail).toContain('roster channel add whatsapp');

    expect(await store.showQr(qr)).toBe(true);
    const waiting = await link();
    expect(waiting.json()).toMatchObject({ status: 'waiting_for_scan', who: null });
    const svg = waiting.json().codeSvg as string;
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*viewBox="0 0 \d+ \d+"/);
    expect(svg).toContain('<path');
    // The page gets the picture; the code's text (its pairing secret) is not handed out as text.
    expect(waiting.body).not.toContain('YWR2LXNlY3JldA');

    const { state, saveCreds } = await store.authState();
    Object.assign(state.creds, { me: { id: '4915550000000:12@s.whatsapp.net', name: 'Roster' } });
    await saveCreds();
    expect((await link()).json()).toMatchObject({ status: 'linked', who: '+4915550000000', codeSvg: null, detail: 'Linked as +4915550000000.' });

    await store.setConnection('reconnecting');
    expect((await link()).json()).toMatchObject({ status: 'reconnecting', who: '+4915550000000' });

    await store.loggedOut();
    const out = (await link()).json();
    expect(out).toMatchObject({ status: 'logged_out', who: '+4915550000000', codeSvg: null });
    expect(out.detail).toContain('roster channel add whatsapp');
  });

  it('is the owner’s alone', async () => {
    const asMember = await link(member);
    expect(asMember.statusCode).toBe(403);
    expect(asMember.json().error.code).toBe('owner_required');
    expect((await server.request('GET', '/api/channels/whatsapp/link')).statusCode).toBe(401);
  });

  it('is asked of a channel that links by a code only: a token channel, or a name no plugin registered, is a 400 that names the ones that do', async () => {
    for (const channel of ['telegram', 'fax']) {
      const answer = await link(owner, channel);
      expect(answer.statusCode).toBe(400);
      expect(answer.json().error.message).toContain('whatsapp');
    }
    // Its control: the same request for the channel that links answers.
    expect((await link(owner, 'whatsapp')).statusCode).toBe(200);
  });
});
