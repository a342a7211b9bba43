import { readEventStream } from './event-stream.ts';

/**
 * The shapes the HTTP API answers: the server's own schemas (@roster/api),
 * so that a field the server changes fails the page's typecheck. Dates
 * arrive as ISO strings.
 */
import type * as Api from '@roster/api';

export type Person = Api.Person;
export type Agent = Api.Agent;
export type EngineChoice = Api.EngineChoice;
export type SourceMessage = Api.SourceMessage;
type Provenance = Api.Provenance & { sources?: SourceMessage[] };
/** A fact; the memory listing's also name the messages they came from (`provenance.sources`). */
export type Fact = Omit<Api.Fact, 'provenance'> & { provenance: Provenance };
export type FactGroup = Api.FactGroup;
export type Tombstone = Api.Tombstone;
export type FactVersion = Api.FactVersion;
export type Evidence = Api.Evidence;
export type Approval = Api.Approval;
export type Lesson = Api.Lesson;
export type MirrorCase = Api.MirrorCase;
export type MirrorReport = Api.MirrorReport;
export type PersonWithIdentities = Api.PersonWithIdentities;
export type TranscriptLine = Api.TranscriptLine;
export type ApiToken = Api.ApiToken;
export type ChannelStatus = Api.ChannelStatus;
export type AuditEvent = Api.AuditEvent;
export type ChainReport = Api.ChainReport;
export type ChatMemory = Api.MemoryUsed;
export type ChatToolCall = Api.ChatToolCall;
export type TurnEnd = Api.TurnEnd;
export type ChannelLink = Api.ChannelLink;
export type Me = Api.Me;
export type ChatHistory = Api.ChatHistory;
export type EngineTest = Api.EngineTest;
export type PurgeResult = Api.PurgeResult;

/** A refusal or failure from the API, with its stable code. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

let csrfToken: string | null = null;
let signedOut: () => void = () => undefined;

/** The session's CSRF token, sent on every request that changes something. */
export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/** What to do when the API says the session is gone (401). */
export function onSignedOut(handler: () => void): void {
  signedOut = handler;
}

async function failure(response: Response): Promise<ApiError> {
  let code = 'request_failed';
  let message = `The server answered ${response.status} ${response.statusText}.`;
  try {
    const body = (await response.json()) as { error?: { code?: string; message?: string } };
    if (typeof body.error?.code === 'string') code = body.error.code;
    if (typeof body.error?.message === 'string') message = body.error.message;
  } catch {
    // Not JSON: keep the status line.
  }
  return new ApiError(response.status, code, message);
}

function headers(method: string, body: unknown): Headers {
  const result = new Headers({ accept: 'application/json' });
  if (body !== undefined) result.set('content-type', 'application/json');
  if (method !== 'GET' && method !== 'HEAD' && csrfToken !== null) result.set('x-csrf-token', csrfToken);
  return result;
}

async function send(method: string, path: string, body: unknown, accept?: string): Promise<Response> {
  let response: Response;
  const requestHeaders = headers(method, body);
  if (accept !== undefined) requestHeaders.set('accept', accept);
  try {
    response = await fetch(path, {
      method,
      headers: requestHeaders,
      credentials: 'same-origin',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch {
    throw new ApiError(0, 'unreachable', 'Roster did not answer: is it still running?');
  }
  if (!response.ok) {
    const error = await failure(response);
    if (response.status === 401 && path !== '/api/login' && path !== '/api/me') signedOut();
    throw error;
  }
  return response;
}

/** Call the API and read its JSON answer. */
export async function api<T>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const response = await send(method, path, body);
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  return (text === '' ? undefined : JSON.parse(text)) as T;
}

/** A path with its query, leaving out empty values. */
export function withQuery(path: string, query: Record<string, string | number | boolean | null | undefined>): string {
  const parameters = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== null && value !== undefined && value !== '' && value !== false) parameters.set(key, String(value));
  }
  const text = parameters.toString();
  return text === '' ? path : `${path}?${text}`;
}

/** One segment of a path, escaped (agent names may be in any script). */
export function segment(value: string): string {
  return encodeURIComponent(value);
}

export interface ChatHandlers {
  delta(agent: string, delta: string): void;
  turnEnd(turn: TurnEnd): void;
  /** Roster itself answered instead of an agent (no agent yet, "which agent?", an /agent switch). */
  notice(text: string): void;
  done(conversationId: string): void;
}

/** Send a chat message and follow its answer as it streams (POST, so fetch and a stream reader rather than EventSource). */
export async function chat(request: { agent?: string; team?: true; message: string; conversation?: string }, handlers: ChatHandlers): Promise<void> {
  const response = await send('POST', '/api/chat', request, 'text/event-stream');
  if (response.body === null) throw new ApiError(0, 'no_stream', 'The server answered without a stream.');
  for await (const event of readEventStream(response.body)) {
    const data = event.data === '' ? {} : (JSON.parse(event.data) as Record<string, unknown>);
    if (event.event === 'text-delta') handlers.delta(String(data.agent ?? ''), String(data.delta ?? ''));
    else if (event.event === 'turn-end') handlers.turnEnd(data as unknown as TurnEnd);
    else if (event.event === 'notice') handlers.notice(String(data.text ?? ''));
    else if (event.event === 'done') handlers.done(String(data.conversationId ?? ''));
    else if (event.event === 'error') throw new ApiError(0, String(data.code ?? 'chat_failed'), String(data.message ?? 'The turn failed.'));
  }
}
