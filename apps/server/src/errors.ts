import { RosterError } from '@roster/errors';

/** The one shape of every error the server answers. */
export interface ErrorBody {
  error: { code: string; message: string; stack?: string };
}

/** What a person reads when the server itself failed; the details go to its log. */
export const internalMessage = 'The server failed to answer; see its log.';

/** An error the API raises itself, with the status it answers. */
export class ApiError extends RosterError {
  readonly status: number;
  constructor(status: number, code: string, message: string) {
    super(code, message);
    this.name = 'ApiError';
    this.status = status;
  }
}

/** Codes whose status the suffix rules below would not give. */
const statusByCode: Readonly<Record<string, number>> = {
  unauthenticated: 401,
  login_link_invalid: 401,
  csrf_failed: 403,
  owner_required: 403,
  approval_needs_person: 403,
  approval_from_job: 403,
  host_not_allowed: 421,
  rate_limited: 429,
  too_long: 413,
  identity_taken: 409,
  approval_decided: 409,
  agent_active: 409,
  agent_archived: 409,
  fact_state: 409,
  fact_not_current: 409,
  tombstoned: 409,
  rejected_statement: 409,
  link_codes_exhausted: 409,
  last_owner: 409,
  // Faults of the server, not of the request.
  disk_full: 507,
  database_closed: 500,
  scope_nested: 500,
  scope_invalid: 500,
  admin_reason_missing: 500,
  memory_unavailable: 500,
};

/** Faults of the server whose message is shown all the same: it says what the operator does (free space), and names nothing inside. */
const shownFaults: ReadonlySet<string> = new Set(['disk_full']);

/**
 * The status of a Roster error: the API's own carry theirs; `*_not_found`
 * is 404, `*_exists` 409, a text over the limit 413, the codes above as
 * listed, and any other refusal of Roster's 400 (its message says why).
 */
export function statusOf(error: RosterError): number {
  if (error instanceof ApiError) return error.status;
  if ((error as { reason?: unknown }).reason === 'too-long') return 413;
  const listed = statusByCode[error.code];
  if (listed !== undefined) return listed;
  if (error.code.endsWith('_not_found')) return 404;
  if (error.code.endsWith('_exists')) return 409;
  return 400;
}

/** Codes for what Fastify refuses before a handler runs, by status. */
const frameworkCodes: Readonly<Record<number, string>> = {
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'too_long',
  415: 'unsupported_media_type',
};

/**
 * Any failure as the status and body the server answers: Roster's errors
 * with their code and message, Fastify's own refusals (a body too large, a
 * media type it does not read) with theirs, and anything else as 500 with
 * a fixed message. The stack only when NODE_ENV=development was set.
 */
export function describeError(error: unknown, showStack: boolean): { status: number; body: ErrorBody } {
  let status: number;
  let code: string;
  let message: string;
  if (RosterError.isInstance(error)) {
    status = statusOf(error);
    const hidden = status >= 500 && !shownFaults.has(error.code);
    code = hidden ? 'internal' : error.code;
    message = hidden ? internalMessage : error.message;
  } else {
    const statusCode = (error as { statusCode?: unknown }).statusCode;
    status = typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500 ? statusCode : 500;
    code = status >= 500 ? 'internal' : (frameworkCodes[status] ?? 'invalid_request');
    message = status >= 500 ? internalMessage : (error as Error).message;
  }
  const stack = showStack && error instanceof Error ? error.stack : undefined;
  return { status, body: { error: { code, message, ...(stack === undefined ? {} : { stack }) } } };
}
