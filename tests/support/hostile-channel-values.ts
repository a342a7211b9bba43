/**
 * The hostile inbound payloads every channel is fed (tests/hostile-channels.test.ts),
 * generated with fast-check: random JSON, message- and button-shaped objects
 * with wrong types, NUL bytes, lone surrogates, oversized texts, JSON nested
 * 10,000 deep, bytes that are no UTF-8; per channel, in its own shapes.
 */
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import type { FakeDiscord } from '@roster/channel-discord/testing';
import { fakeSlackBot, type FakeSlack } from '@roster/channel-slack/testing';
import { fakeBot, type FakeWhatsApp } from '@roster/channel-whatsapp/testing';

// ---------------------------------------------------------------------------
// The hostile values.

const nastyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ maxLength: 20 }).map((text) => `${text}\u0000${text}`),
  fc.constantFrom('\uD800', 'a\uDFFFb', '\u0000', '/roster link 000000', '/start', 'link 123456', '<@UROSTERBOT>', '@roster_test_bot /roster agent Scout', "'; drop table messages; --", '🙂'.repeat(50), ''),
  fc.integer({ min: 4_001, max: 60_000 }).map((length) => 'x'.repeat(length)),
);

const wrongType = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
);

/** A value nested `depth` deep, built without recursion. */
function deep(depth: number, shape: 'array' | 'object'): unknown {
  let value: unknown = 1;
  for (let level = 0; level < depth; level++) value = shape === 'array' ? [value] : { a: value };
  return value;
}
const deepValue = (depths = [1_000, 10_000]) => fc.record({ depth: fc.constantFrom(...depths), shape: fc.constantFrom('array' as const, 'object' as const) }).map(({ depth, shape }) => deep(depth, shape));

/** No payload here may come from a linked person: a value that names their handle anywhere is left out (walked without recursion: some are 10,000 deep). */
export const notLinked = (linked: string) => (value: unknown) => {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const next = stack.pop();
    if ((typeof next === 'string' || typeof next === 'number') && String(next).includes(linked)) return false;
    if (typeof next === 'object' && next !== null) stack.push(...Object.values(next));
  }
  return true;
};
/** The start of a value, for a failure's message (JSON.stringify recurses: too deep, and it says so). */
export const shown = (value: unknown): string => {
  try {
    return String(JSON.stringify(value)).slice(0, 200);
  } catch {
    return '(nested too deep to show)';
  }
};
export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

// ---------------------------------------------------------------------------
// Telegram updates.

const telegramId = fc.oneof(fc.integer({ min: 7_000_000, max: 9_000_000_000 }), wrongType, nastyString);
const telegramUser = fc.oneof(
  fc.record({ id: telegramId, is_bot: fc.oneof(fc.boolean(), wrongType), first_name: fc.oneof(nastyString, wrongType), last_name: fc.oneof(nastyString, wrongType), username: fc.oneof(nastyString, wrongType) }, { requiredKeys: [] }),
  wrongType,
);
const telegramChat = fc.oneof(fc.record({ id: telegramId, type: fc.oneof(fc.constantFrom('private', 'group', 'supergroup', 'channel'), nastyString, wrongType) }, { requiredKeys: [] }), wrongType);
const telegramEntity = fc.record(
  { type: fc.oneof(fc.constantFrom('mention', 'text_mention', 'bot_command', 'url'), wrongType), offset: fc.oneof(fc.integer(), wrongType), length: fc.oneof(fc.integer(), wrongType), user: telegramUser },
  { requiredKeys: [] },
);
const telegramMessage = (text: fc.Arbitrary<unknown>) =>
  fc.record(
    {
      message_id: fc.oneof(fc.nat(), wrongType),
      date: fc.oneof(fc.nat(), wrongType),
      chat: telegramChat,
      from: telegramUser,
      text,
      caption: fc.oneof(nastyString, wrongType),
      entities: fc.oneof(fc.array(telegramEntity, { maxLength: 3 }), wrongType),
      photo: fc.oneof(fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 2 }), wrongType),
      voice: wrongType,
      reply_to_message: fc.oneof(wrongType, fc.record({ message_id: fc.oneof(fc.nat(), wrongType), from: telegramUser }, { requiredKeys: [] })),
    },
    { requiredKeys: [] },
  );
// Above the stand-in's own update ids (1, 2, 3 …): a hostile update that parses would otherwise take a later real update's id, which is then dropped as a redelivery.
const updateId = fc.integer({ min: 2 ** 30, max: 2 ** 31 - 1 });

/** Each kind of Telegram update; `depths`: how deep the nested ones go. */
export const telegramKinds = (depths: number[]): Record<string, fc.Arbitrary<unknown>> => ({
  'random JSON': fc.oneof(fc.jsonValue(), fc.record({ update_id: updateId }).chain((head) => fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 3 }).map((rest) => ({ ...rest, ...head })))),
  'messages with wrong types': fc.record({ update_id: updateId, message: fc.oneof(telegramMessage(fc.oneof(nastyString, wrongType)), wrongType) }),
  'button presses': fc.record({
    update_id: updateId,
    callback_query: fc.oneof(
      fc.record(
        { id: fc.oneof(fc.string({ maxLength: 20 }), wrongType), from: telegramUser, data: fc.oneof(fc.uuid().map((id) => `roster:approve:${id}`), fc.uuid().map((id) => `roster:reject:${id}`), nastyString, wrongType), message: fc.oneof(wrongType, telegramMessage(nastyString)) },
        { requiredKeys: [] },
      ),
      wrongType,
    ),
  }),
  'deep JSON': fc.oneof(
    deepValue(depths).map((value) => ({ update_id: 2 ** 30, message: value })),
    fc.record({ update_id: updateId, message: telegramMessage(deepValue(depths)) }),
  ),
  oversized: fc.record({ update_id: updateId, message: telegramMessage(fc.integer({ min: 64 * 1024, max: 1_000_000 }).map((length) => 'y'.repeat(length))) }),
});

// ---------------------------------------------------------------------------
// Discord gateway events.

export const discordKinds = (fake: FakeDiscord): Record<string, fc.Arbitrary<{ type: string; data: unknown }>> => {
  const id = fc.oneof(fc.bigInt({ min: 10n ** 17n, max: 10n ** 19n }).map(String), wrongType, nastyString);
  const channelId = fc.oneof(fc.constant(fake.groupChatId), fc.constant(fake.dmChatId(fake.user(8))), id);
  const user = fc.oneof(fc.record({ id, username: fc.oneof(nastyString, wrongType), global_name: fc.oneof(nastyString, wrongType), bot: fc.oneof(fc.boolean(), wrongType) }, { requiredKeys: [] }), wrongType);
  const attachment = fc.record(
    { id, filename: fc.oneof(nastyString, wrongType), size: fc.oneof(fc.integer(), wrongType), url: fc.oneof(nastyString, wrongType), content_type: fc.oneof(fc.constantFrom('image/png', 'audio/ogg', 'video/mp4'), nastyString, wrongType), waveform: fc.oneof(nastyString, wrongType) },
    { requiredKeys: [] },
  );
  const message = (content: fc.Arbitrary<unknown>) =>
    fc.record(
      {
        id,
        channel_id: channelId,
        channel_type: fc.oneof(fc.constantFrom(0, 1), wrongType),
        guild_id: fc.oneof(fc.constant(fake.guildId), wrongType),
        author: user,
        content: fc.oneof(content, fc.constant(`<@${fake.botId}> /link 0000`)),
        mentions: fc.oneof(fc.array(user, { maxLength: 2 }), wrongType),
        attachments: fc.oneof(fc.array(attachment, { maxLength: 2 }), wrongType),
        message_reference: fc.oneof(fc.record({ message_id: id }, { requiredKeys: [] }), wrongType),
        referenced_message: fc.oneof(fc.record({ id, author: user, content: nastyString }, { requiredKeys: [] }), wrongType),
        type: fc.oneof(fc.constantFrom(0, 19), wrongType),
        flags: fc.oneof(fc.integer(), wrongType),
      },
      { requiredKeys: [] },
    );
  const interaction = fc.record(
    {
      id,
      application_id: fc.oneof(fc.constant(fake.applicationId), wrongType),
      type: fc.oneof(fc.constantFrom(2, 3), wrongType),
      data: fc.oneof(
        fc.record(
          {
            name: fc.oneof(fc.constantFrom('agents', 'agent', 'link', 'forget'), nastyString),
            type: fc.oneof(fc.constant(1), wrongType),
            options: fc.oneof(fc.array(fc.record({ name: fc.oneof(fc.constantFrom('name', 'code', 'words'), nastyString), type: fc.oneof(fc.constant(3), wrongType), value: fc.oneof(nastyString, wrongType) }, { requiredKeys: [] }), { maxLength: 2 }), wrongType),
            custom_id: fc.oneof(fc.uuid().map((approval) => `roster:approve:${approval}`), nastyString, wrongType),
            component_type: fc.oneof(fc.constant(2), wrongType),
          },
          { requiredKeys: [] },
        ),
        wrongType,
      ),
      channel_id: channelId,
      channel: fc.oneof(fc.record({ id: channelId, type: fc.oneof(fc.constantFrom(0, 1), wrongType) }, { requiredKeys: [] }), wrongType),
      user,
      member: fc.oneof(fc.record({ user }, { requiredKeys: [] }), wrongType),
      guild_id: fc.oneof(fc.constant(fake.guildId), wrongType),
      token: fc.oneof(nastyString, wrongType),
      message: fc.oneof(message(nastyString), wrongType),
    },
    { requiredKeys: [] },
  );
  const eventType = fc.oneof(fc.constantFrom('MESSAGE_CREATE', 'INTERACTION_CREATE', 'MESSAGE_UPDATE', 'TYPING_START', 'CHANNEL_CREATE'), nastyString);
  return {
    'random JSON': fc.record({ type: eventType, data: fc.jsonValue() }),
    'messages with wrong types': fc.record({ type: fc.constant('MESSAGE_CREATE'), data: fc.oneof(message(fc.oneof(nastyString, wrongType)), wrongType) }),
    'slash commands and button presses': fc.record({ type: fc.constant('INTERACTION_CREATE'), data: fc.oneof(interaction, wrongType) }),
    // The fake gateway writes each event with JSON.stringify, which recurses: 1,000 deep is what it sends.
    'deep JSON': fc.oneof(
      deepValue([1_000]).map((value) => ({ type: 'MESSAGE_CREATE', data: value })),
      message(deepValue([1_000])).map((data) => ({ type: 'MESSAGE_CREATE', data })),
    ),
    oversized: message(fc.integer({ min: 64 * 1024, max: 1_000_000 }).map((length) => 'w'.repeat(length))).map((data) => ({ type: 'MESSAGE_CREATE', data })),
  };
};

// ---------------------------------------------------------------------------
// WhatsApp messages.upsert events.

export const whatsappKinds = (fake: FakeWhatsApp): Record<string, fc.Arbitrary<unknown>> => {
  const stranger = fake.user(8);
  const jid = fc.oneof(
    fc.constantFrom(fake.dmChatId(stranger), fake.groupChatId, `${BigInt(stranger.id.slice(1)) + 100_000_000_000_000n}@lid`, 'status@broadcast', '120363000000000009@newsletter', `${fakeBot.lid}@lid`, `${fakeBot.number}@s.whatsapp.net`),
    nastyString,
    wrongType,
  );
  const words = fc.oneof(nastyString, wrongType);
  const context = fc.oneof(
    fc.record(
      {
        mentionedJid: fc.oneof(fc.array(jid, { maxLength: 2 }), wrongType),
        stanzaId: fc.oneof(nastyString, wrongType),
        participant: jid,
        quotedMessage: fc.oneof(fc.record({ conversation: words }, { requiredKeys: [] }), wrongType),
      },
      { requiredKeys: [] },
    ),
    wrongType,
  );
  const bytes = fc.oneof(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.uint8Array({ maxLength: 40 }), wrongType);
  // Where the file is, the key that opens it, its hash and length: none of it names a file WhatsApp's media server keeps.
  const media = fc.oneof(
    fc.record(
      {
        url: fc.oneof(fc.constantFrom('https://mmg.whatsapp.net/v/t62.7118-24/1_1_n.enc', 'https://attacker.example/v/1_n.enc', `${fake.mediaOrigin}/v/t62.7118-24/2_2_n.enc`), nastyString, wrongType),
        directPath: fc.oneof(fc.constantFrom('/v/t62.7118-24/3_3_n.enc?ccb=11-4', '//attacker.example/v/1_n.enc', '@attacker.example/v', '/..\\..\\etc'), nastyString, wrongType),
        mediaKey: bytes,
        fileSha256: bytes,
        fileEncSha256: bytes,
        fileLength: fc.oneof(fc.integer(), fc.constant(11 * 1024 * 1024), fc.constant(-1), wrongType),
        mimetype: fc.oneof(fc.constantFrom('image/jpeg', 'audio/ogg; codecs=opus', 'application/pdf', 'image/../../x'), nastyString, wrongType),
        caption: words,
        ptt: fc.oneof(fc.boolean(), wrongType),
        fileName: words,
        contextInfo: context,
      },
      { requiredKeys: [] },
    ),
    wrongType,
  );
  const content = fc.oneof(
    fc.record({ conversation: words }),
    fc.record({ extendedTextMessage: fc.oneof(fc.record({ text: words, contextInfo: context }, { requiredKeys: [] }), wrongType) }),
    fc.record({ imageMessage: media }),
    fc.record({ audioMessage: media }),
    fc.record({ documentMessage: media }),
    fc.record({ stickerMessage: media }),
    fc.record({ videoMessage: media }),
    fc.record({ documentWithCaptionMessage: fc.oneof(fc.record({ message: fc.oneof(fc.record({ documentMessage: media }), wrongType) }), wrongType) }),
    fc.record({ ephemeralMessage: fc.record({ message: fc.oneof(fc.record({ conversation: words, imageMessage: media }, { requiredKeys: [] }), wrongType) }) }),
    fc.record({ reactionMessage: wrongType, protocolMessage: wrongType, pollCreationMessage: wrongType }, { requiredKeys: [] }),
    wrongType,
  );
  const message = (body: fc.Arbitrary<unknown>) =>
    fc.record(
      {
        key: fc.oneof(
          fc.record(
            {
              remoteJid: jid,
              remoteJidAlt: jid,
              fromMe: fc.oneof(fc.constant(false), fc.boolean(), wrongType),
              id: fc.oneof(fc.stringMatching(/^3EB0[0-9A-F]{16}$/), nastyString, wrongType),
              participant: jid,
              participantAlt: jid,
              addressingMode: fc.oneof(fc.constantFrom('pn', 'lid'), wrongType),
            },
            { requiredKeys: [] },
          ),
          wrongType,
        ),
        message: body,
        messageTimestamp: fc.oneof(fc.nat(), wrongType),
        pushName: words,
      },
      { requiredKeys: [] },
    );
  // Mostly `notify` (the new messages the adapter reads); sometimes another type, or none.
  const type = fc.oneof({ arbitrary: fc.constant('notify'), weight: 4 }, { arbitrary: fc.oneof(fc.constantFrom('append', 'prepend'), nastyString, wrongType), weight: 1 });
  const upsert = (messages: fc.Arbitrary<unknown>) => fc.record({ messages, type }, { requiredKeys: [] });
  return {
    // Baileys' emitter reads `type` off the data before any listener sees it: null is not something it can carry, anything else is.
    'random JSON': fc.oneof(fc.jsonValue().filter((value) => value !== null), upsert(fc.oneof(fc.array(fc.jsonValue(), { maxLength: 3 }), fc.jsonValue()))),
    'messages with wrong types': upsert(fc.oneof(fc.array(message(content), { minLength: 1, maxLength: 3 }), wrongType)),
    'media with wrong types': upsert(fc.array(message(fc.oneof(fc.record({ imageMessage: media }), fc.record({ audioMessage: media }), fc.record({ documentMessage: media }))), { minLength: 1, maxLength: 2 })),
    // Emitted in memory, not written as JSON: 10,000 deep reaches the adapter as it is.
    'deep nesting': fc.oneof(
      deepValue().map((value) => ({ type: 'notify', messages: [value] })),
      upsert(fc.array(message(deepValue()), { minLength: 1, maxLength: 1 })),
      upsert(fc.array(message(deepValue().map((value) => ({ extendedTextMessage: { text: 'hello?', contextInfo: { quotedMessage: value, mentionedJid: value } } }))), { minLength: 1, maxLength: 1 })),
    ),
    oversized: upsert(fc.array(message(fc.integer({ min: 64 * 1024, max: 1_000_000 }).map((length) => ({ conversation: 'v'.repeat(length) }))), { minLength: 1, maxLength: 1 })),
  };
};

// ---------------------------------------------------------------------------
// Slack events.

const slackId = fc.oneof(fc.stringMatching(/^[UDCWB][A-Z0-9]{6,10}$/), nastyString, wrongType);
const slackEvent = fc.record(
  {
    type: fc.oneof(fc.constantFrom('message', 'app_mention', 'member_joined_channel', 'reaction_added'), nastyString, wrongType),
    channel: slackId,
    channel_type: fc.oneof(fc.constantFrom('im', 'channel', 'group', 'mpim'), wrongType),
    user: slackId,
    text: fc.oneof(nastyString, wrongType),
    ts: fc.oneof(fc.constant('1700000000.000100'), nastyString, wrongType),
    event_ts: fc.oneof(fc.constant('1700000000.000100'), wrongType),
    thread_ts: fc.oneof(fc.constant('1700000000.000100'), wrongType),
    parent_user_id: fc.oneof(fc.constant(fakeSlackBot.userId), slackId),
    subtype: fc.oneof(fc.constantFrom('bot_message', 'file_share', 'message_changed'), wrongType),
    files: wrongType,
    bot_id: fc.oneof(fc.constant(fakeSlackBot.botId), wrongType),
  },
  { requiredKeys: [] },
);
const form = (fields: Record<string, unknown>) =>
  new URLSearchParams(Object.entries(fields).map(([key, value]) => [key, typeof value === 'string' ? value : JSON.stringify(value) ?? ''])).toString();

/** A body as Slack would post it: the bytes and their content type. */
interface SlackBody {
  body: Buffer;
  contentType: string;
}
const json = (value: unknown, contentType = 'application/json'): SlackBody => ({ body: Buffer.from(JSON.stringify(value) ?? 'null'), contentType });
const invalidUtf8 = fc.constantFrom([0xff], [0xfe], [0xc3, 0x28], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0x80]);

export function slackKinds(fake: FakeSlack): Record<string, fc.Arbitrary<SlackBody>> {
  return {
    'random JSON': fc.jsonValue().map((value) => json(value)),
    'events with wrong types': slackEvent.map((event) => json(JSON.parse(fake.eventBody(event as Record<string, unknown>)))),
    'envelopes with wrong types': fc
      .record({ type: fc.oneof(fc.constantFrom('event_callback', 'url_verification', 'app_rate_limited'), wrongType), event: fc.oneof(slackEvent, wrongType), challenge: fc.oneof(nastyString, wrongType), event_id: fc.oneof(nastyString, wrongType), team_id: fc.oneof(fc.constant(fakeSlackBot.team), wrongType), authorizations: wrongType }, { requiredKeys: [] })
      .map((value) => json(value)),
    'commands and button presses': fc.oneof(
      fc
        .record({ command: fc.oneof(fc.constant('/roster'), nastyString), text: fc.oneof(nastyString, wrongType), user_id: slackId, user_name: fc.oneof(nastyString, wrongType), channel_id: slackId, trigger_id: fc.oneof(nastyString, wrongType), team_id: fc.constant(fakeSlackBot.team) }, { requiredKeys: [] })
        .map((fields) => ({ body: Buffer.from(form(fields)), contentType: 'application/x-www-form-urlencoded' })),
      fc
        .oneof(
          fc.record(
            {
              type: fc.oneof(fc.constant('block_actions'), nastyString),
              user: fc.oneof(fc.record({ id: slackId, name: fc.oneof(nastyString, wrongType) }, { requiredKeys: [] }), wrongType),
              actions: fc.oneof(fc.array(fc.record({ action_id: fc.oneof(fc.constantFrom('roster_approve', 'roster_reject'), nastyString), value: fc.oneof(fc.uuid(), nastyString, wrongType), type: fc.constant('button') }, { requiredKeys: [] }), { maxLength: 2 }), wrongType),
              container: fc.oneof(fc.record({ channel_id: slackId, message_ts: fc.oneof(nastyString, wrongType) }, { requiredKeys: [] }), wrongType),
              response_url: fc.oneof(nastyString, wrongType),
              team: fc.constant({ id: fakeSlackBot.team }),
            },
            { requiredKeys: [] },
          ),
          fc.jsonValue(),
        )
        .map((payload) => ({ body: Buffer.from(form({ payload: JSON.stringify(payload) })), contentType: 'application/x-www-form-urlencoded' })),
      fc.string({ maxLength: 200 }).map((text) => ({ body: Buffer.from(`payload=${text}`), contentType: 'application/x-www-form-urlencoded' })),
    ),
    // Written as text: JSON.stringify recurses, and 10,000 levels are past its depth here.
    'deep JSON': fc
      .record({ depth: fc.constantFrom(1_000, 10_000), shape: fc.constantFrom('array', 'object'), inEvent: fc.boolean() })
      .map(({ depth, shape, inEvent }) => {
        const nested = shape === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
        const body = inEvent ? fake.eventBody({ type: 'message', channel_type: 'im', channel: 'D0STRANGER', user: 'U0STRANGER', text: '#deep#', ts: '1.1' }).replace('"#deep#"', nested) : nested;
        return { body: Buffer.from(body), contentType: 'application/json' };
      }),
    oversized: fc.integer({ min: 64 * 1024, max: 1_000_000 }).map((length) => json(JSON.parse(fake.eventBody({ type: 'message', channel_type: 'im', channel: 'D0STRANGER', user: 'U0STRANGER', text: 'z'.repeat(length), ts: '1.1' })))),
    'not JSON, and not UTF-8': fc.oneof(
      fc.record({ body: fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)), contentType: fc.constantFrom('application/json', 'application/x-www-form-urlencoded', 'text/plain', '') }),
      fc
        .tuple(invalidUtf8, fc.string({ maxLength: 20 }))
        .map(([bytes, text]) => Buffer.concat([Buffer.from(fake.eventBody({ type: 'message', channel_type: 'im', channel: 'D0STRANGER', user: 'U0STRANGER', text: `${text}#`, ts: '1.1' })).subarray(0, -2), Buffer.from(bytes), Buffer.from('"}')]))
        .map((body) => ({ body, contentType: 'application/json' })),
    ),
  };
}

/** Post bytes to the Slack adapter's receiver, signed with the right secret over exactly those bytes. */
export async function postSigned(fake: FakeSlack, request: SlackBody): Promise<number> {
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = `v0=${createHmac('sha256', fake.signingSecret).update(Buffer.concat([Buffer.from(`v0:${timestamp}:`), request.body])).digest('hex')}`;
  const response = await fetch(fake.adapter.eventsUrl!, {
    method: 'POST',
    headers: { ...(request.contentType === '' ? {} : { 'content-type': request.contentType }), 'x-slack-request-timestamp': String(timestamp), 'x-slack-signature': signature },
    body: new Uint8Array(request.body),
  });
  await response.arrayBuffer();
  return response.status;
}
