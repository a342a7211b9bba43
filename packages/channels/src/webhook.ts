import type { IncomingMessage, ServerResponse } from 'node:http';

/** The largest webhook body read: a platform's update is a few kilobytes. */
export const webhookBodyLimit = 1024 * 1024;

/** Answer a webhook request, once: a JSON body when one is given. */
export function answerWebhook(response: ServerResponse, status: number, body?: unknown): void {
  if (response.headersSent) return;
  if (body === undefined) {
    response.writeHead(status).end();
    return;
  }
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** A request's JSON body, or the status that refuses it (413 too large, 400 not JSON). */
export async function readJsonBody(request: IncomingMessage, limit = webhookBodyLimit): Promise<{ ok: true; body: unknown } | { ok: false; status: number }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > limit) return { ok: false, status: 413 };
    chunks.push(chunk as Buffer);
  }
  try {
    return { ok: true, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown };
  } catch {
    return { ok: false, status: 400 };
  }
}
