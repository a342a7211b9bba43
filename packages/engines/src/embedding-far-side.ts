/**
 * A real HTTP server on 127.0.0.1 that plays an embeddings provider (OpenAI's
 * POST /v1/embeddings, Ollama's POST /api/embed), for the AI SDK embedders'
 * tests: the far side of the network, never our own code.
 */
import http, { type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EmbedderError } from '@roster/errors';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

export type Answer = (request: ReceivedRequest, response: ServerResponse) => void;

export interface FarSide {
  baseUrl: string;
  requests: ReceivedRequest[];
}

const servers: http.Server[] = [];

/** A real HTTP server on 127.0.0.1 that plays the embeddings provider; the embedders reach it through the AI SDK's own clients. */
export async function startFarSide(answer: Answer): Promise<FarSide> {
  const requests: ReceivedRequest[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const received: ReceivedRequest = {
        method: request.method ?? '',
        path: request.url ?? '',
        headers: request.headers,
        body: text === '' ? undefined : (JSON.parse(text) as unknown),
      };
      requests.push(received);
      answer(received, response);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}`, requests };
}

/** Closes every far side started so far; each test file calls it after each case. */
export async function closeFarSides(): Promise<void> {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** A base URL nobody listens on: a server's port, after the server closed. */
export async function closedBaseUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}

/** Asks the client to retry at once: the AI SDK honours `retry-after-ms` instead of its two-second backoff. */
export const retryNow = { 'retry-after-ms': '1' };

/** The raw (not normalised) vector the far side gives a text: distinct per text, length 3. */
export function rawVector(text: string): number[] {
  return [text.length, 2, 1];
}

export function unit(vector: readonly number[]): number[] {
  const norm = Math.hypot(...vector);
  return vector.map((value) => value / norm);
}

export function inputsOf(request: ReceivedRequest): string[] {
  return (request.body as { input: string[] }).input;
}

/** Answers like OpenAI's POST /v1/embeddings. */
export const openAIAnswer: Answer = (request, response) => {
  const data = inputsOf(request).map((text, index) => ({ object: 'embedding', index, embedding: rawVector(text) }));
  sendJson(response, 200, { object: 'list', data, model: 'text-embedding-test', usage: { prompt_tokens: 1, total_tokens: 1 } });
};

/** Answers like Ollama's POST /api/embed. */
export const ollamaAnswer: Answer = (request, response) => {
  sendJson(response, 200, {
    model: 'nomic-embed-text',
    embeddings: inputsOf(request).map(rawVector),
    total_duration: 14_143_917,
    load_duration: 1_019_500,
    prompt_eval_count: inputsOf(request).length,
  });
};

/** The error `promise` rejects with, or a failure when it resolves. */
export async function rejectionOf(promise: Promise<unknown>): Promise<EmbedderError> {
  try {
    await promise;
  } catch (error) {
    if (!EmbedderError.isInstance(error)) throw new Error(`expected an EmbedderError, got ${String(error)}`);
    return error;
  }
  throw new Error('expected the promise to reject');
}

