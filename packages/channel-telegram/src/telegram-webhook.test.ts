import { afterEach, describe, expect, it } from 'vitest';
import type { ChannelEvent } from '@roster/channels';
import { startFakeTelegram, type FakeTelegram } from './fake-telegram.js';
import { telegramSecretHeader } from './telegram-adapter.js';

let fake: FakeTelegram | undefined;
afterEach(async () => {
  await fake?.adapter.stop();
  await fake?.close();
  fake = undefined;
});

describe('Telegram in webhook mode', () => {
  it('sets the webhook with its secret, and hands on only requests that carry it', async () => {
    fake = await startFakeTelegram({ webhook: true });
    const events: ChannelEvent[] = [];
    await fake.adapter.start({ onMessage: (event) => { events.push(event); }, onApprovalPress: async () => ({ text: '', decided: false }), signal: new AbortController().signal });
    const hook = fake.webhook();
    expect(hook).not.toBeNull();
    expect(fake.calls).toEqual(['getMe', 'setWebhook']);

    const user = fake.user(1);
    const update = (id: number, text: string) => ({
      update_id: id,
      message: { message_id: id, date: 1, chat: { id: Number(user.id), type: 'private' }, from: { id: Number(user.id), is_bot: false, first_name: 'Tess' }, text },
    });
    const post = (body: string, secret?: string) =>
      fetch(hook!.url, { method: 'POST', headers: { 'content-type': 'application/json', ...(secret === undefined ? {} : { [telegramSecretHeader]: secret }) }, body }).then((response) => response.status);

    // Missing or wrong secret: 401, and nothing reaches Roster.
    expect(await post(JSON.stringify(update(901, 'remember that my pin is 1111')))).toBe(401);
    expect(await post(JSON.stringify(update(902, 'remember that my pin is 2222')), 'not-the-secret')).toBe(401);
    expect(await post(JSON.stringify(update(903, 'remember that my pin is 3333')), `${hook!.secretToken}x`)).toBe(401);
    // The right secret with a body that is no update: 400.
    expect(await post('{"hello":1}', hook!.secretToken!)).toBe(400);
    expect(events).toEqual([]);

    // Positive control: the right secret and an update are handed on.
    expect(await post(JSON.stringify(update(904, 'remember that my pin is 4444')), hook!.secretToken!)).toBe(200);
    expect(events.map((event) => event.inbound.text)).toEqual(['remember that my pin is 4444']);

    // Through the fake's own delivery, as Telegram posts it.
    await fake.deliver({ chat: 'dm', from: user, text: 'hello' });
    expect(events.map((event) => event.inbound.text)).toEqual(['remember that my pin is 4444', 'hello']);
    expect(fake.webhookAnswers()).toEqual([200]);
  });

  it('refuses a webhook address Telegram would not post to, and a secret it would not send', async () => {
    const { createTelegramAdapter } = await import('./telegram-adapter.js');
    expect(() => createTelegramAdapter({ token: '1:x', webhook: { url: 'http://example.com/telegram/webhook', secretToken: 'abc' } })).toThrow(/https addresses only/);
    expect(() => createTelegramAdapter({ token: '1:x', webhook: { url: 'https://example.com/telegram/webhook', secretToken: 'has spaces' } })).toThrow(/1 to 256 of A-Z/);
  });
});
