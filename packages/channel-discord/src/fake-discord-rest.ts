/**
 * The fake Discord's REST API, for tests: users/@me, gateway/bot (with the
 * recommended shard count), the application's commands, channel messages
 * sent and edited, typing, direct-message channels, interaction callbacks
 * and their webhook follow-ups and @original edits, attachment downloads;
 * with Discord's refusals on demand. Test-only: excluded from the build.
 */
import http from 'node:http';
import { interactionWindowMs, snowflake, type Answer, type Recorded, type RegisteredCommand, type World } from './fake-discord-world.js';

async function route(world: World, gatewayUrl: string, method: string, path: string, query: URLSearchParams, headers: http.IncomingHttpHeaders, body: Record<string, unknown>): Promise<Answer> {
  const authorised = headers.authorization === `Bot ${world.token}`;
  const unauthorised = world.error(401, 0, '401: Unauthorized');
  let match: RegExpExecArray | null;
  // Interactions and their webhooks are reached with the interaction's token, not the bot's.
  if ((match = /^\/interactions\/(\d+)\/([^/]+)\/callback$/.exec(path)) !== null && method === 'POST') {
    const state = world.interactions.get(match[1]!);
    if (state === undefined || state.token !== match[2]) return world.error(404, 10062, 'Unknown interaction');
    const type = Number(body.type);
    const at = Date.now();
    const answer = (status: number) => state.callbacks.push({ type, status, at });
    if (at - state.createdAt > interactionWindowMs) {
      answer(404);
      return world.error(404, 10062, 'Unknown interaction');
    }
    if (state.callbacks.some((callback) => callback.status < 300)) {
      answer(400);
      return world.error(400, 40060, 'Interaction has already been acknowledged.');
    }
    const data = (body.data ?? {}) as Record<string, unknown>;
    const long = world.tooLong(data);
    if (long !== null) {
      answer(400);
      return long;
    }
    const ephemeral = (Number(data.flags ?? 0) & 64) !== 0;
    let message: Recorded | null = null;
    if (type === 4) message = world.interactionAnswer(state, data, !ephemeral);
    else if (type === 5) state.deferred = true;
    else {
      answer(400);
      return world.error(400, 50035, 'Invalid Form Body');
    }
    state.ephemeral = ephemeral;
    state.original = message;
    answer(query.get('with_response') === 'true' ? 200 : 204);
    if (query.get('with_response') !== 'true') return { status: 204 };
    return {
      status: 200,
      body: {
        interaction: { id: state.id, type: state.kind === 'command' ? 2 : 3, activity_instance_id: null, response_message_id: message?.record.id ?? null, response_message_loading: type === 5, response_message_ephemeral: ephemeral },
        resource: { type, ...(message === null ? {} : { message: message.payload }) },
      },
    };
  }
  if ((match = /^\/webhooks\/(\d+)\/([^/]+)(?:\/messages\/([^/]+))?$/.exec(path)) !== null) {
    const state = [...world.interactions.values()].find((candidate) => candidate.token === match![2]);
    if (match[1] !== world.applicationId || state === undefined) return world.error(404, 10015, 'Unknown Webhook');
    const long = world.tooLong(body);
    const call = (status: number) => state.webhookCalls.push({ method: method as 'PATCH' | 'POST', status, at: Date.now() });
    if (long !== null) {
      call(400);
      return long;
    }
    if (!state.callbacks.some((callback) => callback.status < 300)) {
      call(404);
      return world.error(404, 10015, 'Unknown Webhook');
    }
    if (method === 'PATCH' && match[3] !== undefined) {
      const original = match[3] === '@original' ? state.original : (world.sent.find((entry) => entry.record.id === match![3]) ?? null);
      if (original === null) {
        if (!(match[3] === '@original' && state.deferred)) {
          call(404);
          return world.error(404, 10008, 'Unknown Message');
        }
        // The deferred reply ("thinking…") becomes the answer.
        const made = world.interactionAnswer(state, body, !state.ephemeral);
        state.original = made;
        call(200);
        return { status: 200, body: made?.payload ?? world.messagePayload({ id: snowflake(), channelId: state.channelId, author: world.botUser, content: String(body.content ?? '') }) };
      }
      if (typeof body.content === 'string') {
        original.record.text = body.content;
        original.payload.content = body.content;
        world.edits.push({ id: original.record.id, text: body.content, at: Date.now() });
      }
      call(200);
      return { status: 200, body: original.payload };
    }
    if (method === 'POST' && match[3] === undefined) {
      const ephemeral = (Number(body.flags ?? 0) & 64) !== 0;
      const made = world.interactionAnswer(state, body, !ephemeral);
      call(200);
      return { status: 200, body: made?.payload ?? world.messagePayload({ id: snowflake(), channelId: state.channelId, author: world.botUser, content: String(body.content ?? '') }) };
    }
    return world.error(405, 0, '405: Method Not Allowed');
  }
  if (!authorised) return unauthorised;
  if (method === 'GET' && path === '/gateway/bot') {
    return { status: 200, body: { url: gatewayUrl, shards: world.options.shards, session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 } } };
  }
  if (method === 'GET' && path === '/users/@me') return { status: 200, body: world.botUser };
  if (method === 'GET' && path === '/applications/@me') {
    // GATEWAY_MESSAGE_CONTENT_LIMITED: the intent switched on, for a bot in fewer than 100 servers.
    return { status: 200, body: { id: world.applicationId, name: 'Roster', description: '', bot_public: true, bot_require_code_grant: false, verify_key: 'f'.repeat(64), flags: world.options.messageContentOff ? 0 : 1 << 18, bot: world.botUser } };
  }
  if ((match = /^\/applications\/(\d+)\/commands$/.exec(path)) !== null && method === 'PUT') {
    if (match[1] !== world.applicationId) return world.error(403, 50001, 'Missing Access');
    const list = Array.isArray(body) ? (body as Array<Record<string, unknown>>) : [];
    world.registered = list.map((command) => command as unknown as RegisteredCommand);
    return {
      status: 200,
      body: list.map((command) => ({ id: snowflake(), application_id: world.applicationId, version: snowflake(), type: 1, default_member_permissions: null, nsfw: false, integration_types: [0], contexts: [0, 1], ...command })),
    };
  }
  if (method === 'POST' && path === '/users/@me/channels') {
    const recipient = String(body.recipient_id ?? '');
    if (!/^\d+$/.test(recipient)) return world.error(400, 50035, 'Invalid Form Body');
    return { status: 200, body: world.dmChannel(recipient) };
  }
  if ((match = /^\/channels\/(\d+)\/typing$/.exec(path)) !== null && method === 'POST') {
    const channelId = match[1]!;
    if (world.isDm(channelId) && world.blocked.has(world.userOfDm(channelId))) return world.error(403, 50007, 'Cannot send messages to this user');
    world.typing.push(channelId);
    return { status: 204 };
  }
  if ((match = /^\/channels\/(\d+)\/messages$/.exec(path)) !== null && method === 'POST') {
    const channelId = match[1]!;
    const refused = world.refusal(channelId);
    if (refused !== null) return refused;
    const long = world.tooLong(body);
    if (long !== null) return long;
    if (typeof body.content !== 'string' || body.content === '') return world.error(400, 50006, 'Cannot send an empty message');
    return { status: 200, body: world.record(channelId, body).payload };
  }
  if ((match = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(path)) !== null && method === 'PATCH') {
    const entry = world.sent.find((candidate) => candidate.record.id === match![2] && candidate.record.chatId === match![1]);
    if (entry === undefined) return world.error(404, 10008, 'Unknown Message');
    const long = world.tooLong(body);
    if (long !== null) return long;
    if (typeof body.content === 'string') {
      entry.record.text = body.content;
      entry.payload.content = body.content;
      world.edits.push({ id: entry.record.id, text: body.content, at: Date.now() });
    }
    if (Array.isArray(body.components)) {
      entry.record.buttons = world.buttonsOf(body.components);
      entry.payload.components = body.components;
    }
    return { status: 200, body: entry.payload };
  }
  return world.error(404, 0, '404: Not Found');
}

export function createRestServer(world: World, gatewayUrl: () => string): http.Server {
  return http.createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const url = new URL(request.url ?? '/', 'http://fake');
    // An attachment's bytes, at the address the message gave (Discord's CDN needs no token).
    const attachment = /^\/attachments\/(\d+)\/(\d+)\/([^/]+)$/.exec(url.pathname);
    if (attachment !== null) {
      const file = world.files.get(attachment[2]!);
      if (file === undefined) {
        response.writeHead(404).end();
        return;
      }
      world.downloads.push(url.pathname);
      response.writeHead(200, { 'content-type': file.mediaType, 'content-length': String(file.data.byteLength) });
      response.end(Buffer.from(file.data));
      return;
    }
    const reply = (answer: Answer) => {
      if (answer.body === undefined) {
        response.writeHead(answer.status, answer.headers ?? {}).end();
        return;
      }
      response.writeHead(answer.status, { 'content-type': 'application/json', ...(answer.headers ?? {}) });
      response.end(JSON.stringify(answer.body));
    };
    const api = /^\/api\/v10(\/.*)$/.exec(url.pathname);
    if (api === null) return reply(world.error(404, 0, '404: Not Found'));
    // Discord reads path segments percent-decoded (`%40original` is `@original`).
    const path = decodeURIComponent(api[1]!);
    world.calls.push(`${request.method} ${path.replace(/\/\d{5,}/g, '/:id').replace(/(\/(?:interactions|webhooks)\/:id\/)[^/]+/, '$1:token')}`);
    let body: Record<string, unknown> = {};
    const raw = Buffer.concat(chunks).toString('utf8');
    try {
      body = raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>);
    } catch {
      // A multipart body (files) is not sent by Roster.
      return reply(world.error(400, 50109, 'The request body contains invalid JSON.'));
    }
    route(world, gatewayUrl(), request.method ?? 'GET', path, url.searchParams, request.headers, body).then(reply, () => reply(world.error(500, 0, '500: Internal Server Error')));
  });
});
}
