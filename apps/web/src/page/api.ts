import { readEventStream } from './event-stream.ts';

/** The shapes the HTTP API answers (see the API contract); dates arrive as ISO strings. */

export interface Person {
  id: string;
  name: string;
  role: 'owner' | 'member' | 'guest' | string;
}

export interface Agent {
  id: string;
  name: string;
  job: string;
  engine: string;
  status: 'active' | 'archived' | string;
  createdAt: string;
}

export interface EngineChoice {
  reference: string;
  label: string;
  configured: boolean;
  detail: string;
}

/** A message a fact came from; its words only when it is the reader's own line and not forgotten. */
export interface SourceMessage {
  id: string;
  channel: string;
  role: 'person' | 'agent' | 'system' | 'tool' | string;
  person: { id: string; name: string } | null;
  agent: string | null;
  at: string;
  forgotten: boolean;
  own: boolean;
  text: string | null;
}

interface Provenance {
  actorKind: string;
  actorId: string | null;
  channel: string | null;
  tool: string | null;
  sourceMessageIds: string[];
  /** The memory listing gives the messages themselves; other answers only their ids. */
  sources?: SourceMessage[];
}

export interface Fact {
  id: string;
  content: string | null;
  trust: string;
  category: string;
  audience: string;
  validFrom: string;
  validTo: string | null;
  recordedAt: string;
  supersededAt: string | null;
  uses: number;
  lastUsedAt: string | null;
  provenance: Provenance;
}

export interface FactGroup {
  person: { id: string; name: string } | null;
  facts: Fact[];
  /** What was forgotten here, newest first: when, and who asked; never its words. */
  tombstones: Tombstone[];
}

export interface Tombstone {
  id: string;
  factId: string | null;
  forgottenAt: string;
  forgottenBy: { kind: string; id: string | null; name: string | null } | null;
}

export interface FactVersion {
  fact: Fact;
  relation: 'earlier' | 'this' | 'later' | string;
  /** The audit event that recorded this version. */
  event: { id: string; action: string; actorKind: string; actorId: string | null; occurredAt: string } | null;
}

export interface Evidence {
  eventId: string | null;
  messageId: string | null;
  personId: string | null;
  /** The name of the person whose statement it was. */
  person: string | null;
  kind: string;
  /** An agent's note on why it proposed the lesson. */
  text?: string;
  paraphrased?: boolean;
  /** The message the learning event came from: the door, the time, the words (null once forgotten). */
  message: { channel: string | null; at: string; text: string | null; forgotten: boolean } | null;
}

export interface Approval {
  id: string;
  agent: string;
  text: string;
  evidence: Evidence[];
  proposedByKind: string;
  proposedBy: string | null;
  status: string;
  createdAt: string;
}

export interface Lesson {
  id: string;
  text: string;
  status: 'active' | 'retired' | string;
  version: number;
  approvedBy: string;
  approver: { id: string; name: string };
  approvedAt: string;
  retiredAt: string | null;
  retiredReason: string | null;
  approvalId: string | null;
  evidence: Evidence[];
}

interface MirrorRun {
  verdict: 'pass' | 'fail' | 'error' | string;
  reason: string;
  ranAt: string;
}

export interface MirrorCase {
  id: string;
  text: string;
  status: 'active' | 'graduated' | string;
  streak: number;
  runs: number;
  lastRunAt: string | null;
  graduatedAt: string | null;
  history: MirrorRun[];
}

export interface MirrorReport {
  judged: boolean;
  learned: number;
  total: number;
  summary: string;
  cases: MirrorCase[];
  passRate: Array<{ date: string; passed: number; failed: number }>;
}

export interface PersonWithIdentities extends Person {
  identities: Array<{ channel: string; externalId: string; displayName: string | null }>;
}

/** One line of the person's own conversation, as /api/chat/history gives it. */
export interface TranscriptLine {
  id: string;
  role: 'person' | 'agent' | 'system';
  agent: string | null;
  text: string;
  forgotten: boolean;
  at: string;
}

interface ChannelCredential {
  name: string;
  label: string;
  variable: string;
  source: 'environment' | 'stored' | 'unset';
  updatedAt: string | null;
}

interface ChannelBindingView {
  account: string;
  agent: string | null;
  policy: 'pairing' | 'allowlist' | 'open';
  allowlist: string[];
}

export interface ApiToken {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
}

export interface ChannelStatus {
  channel: string;
  label: string;
  summary: string;
  linkable: boolean;
  configured: boolean;
  detail: string;
  credentials: ChannelCredential[];
  bindings: ChannelBindingView[];
}

export interface AuditEvent {
  id: string;
  agent: string;
  seq: number;
  personId: string | null;
  actorKind: string;
  actorId: string | null;
  action: string;
  targetKind: string;
  targetId: string | null;
  detail: Record<string, unknown>;
  occurredAt: string;
  hash: string;
}

export interface ChainReport {
  agentId: string;
  agent: string;
  events: number;
  ok: boolean;
  broken: { seq: number; id: string; problem: string } | null;
}

export interface ChatMemory {
  id: string;
  content: string | null;
  trust: string;
  why: string;
}

export interface ChatToolCall {
  toolName: string;
  input: unknown;
  output: unknown;
}

export interface TurnEnd {
  agent: string;
  text: string;
  toolCalls: ChatToolCall[];
  memories: ChatMemory[];
}

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
