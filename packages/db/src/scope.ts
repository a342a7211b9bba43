import { RosterError } from '@roster/errors';

/**
 * Who memory is read and written for, in one transaction.
 * - `private`: a direct conversation with `personId`: their private facts and the agent-wide ones.
 * - `group`: a group conversation: agent-wide facts only; private facts are withheld from everyone.
 * - `agent`: the agent itself (a colleague call, a job): agent-wide facts only.
 */
export interface Scope {
  agentId: string;
  personId: string | null;
  audience: 'private' | 'agent' | 'group';
  /**
   * The conversation a turn runs in. What was said to everyone there (a group,
   * or team mode) is readable only with it; without it a scope reads the
   * exchanges between its own agent and person alone.
   */
  conversationId?: string | null;
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether a string is a UUID as Postgres stores ids. */
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && uuidPattern.test(value);
}

/** Validate a scope before it reaches the database; a bad scope is a programming error with a clear message. */
export function assertScope(scope: Scope): Scope {
  if (!isUuid(scope.agentId)) throw new RosterError('scope_invalid', `The scope's agentId must be a UUID, got ${JSON.stringify(scope.agentId)}.`);
  if (scope.personId !== null && !isUuid(scope.personId)) {
    throw new RosterError('scope_invalid', `The scope's personId must be a UUID or null, got ${JSON.stringify(scope.personId)}.`);
  }
  if (!['private', 'agent', 'group'].includes(scope.audience)) {
    throw new RosterError('scope_invalid', `The scope's audience must be private, agent or group, got ${JSON.stringify(scope.audience)}.`);
  }
  if (scope.audience === 'private' && scope.personId === null) {
    throw new RosterError('scope_invalid', 'A private scope needs the person it is private to.');
  }
  if (scope.conversationId !== undefined && scope.conversationId !== null && !isUuid(scope.conversationId)) {
    throw new RosterError('scope_invalid', `The scope's conversationId must be a UUID or null, got ${JSON.stringify(scope.conversationId)}.`);
  }
  return Object.freeze({
    agentId: scope.agentId.toLowerCase(),
    personId: scope.personId?.toLowerCase() ?? null,
    audience: scope.audience,
    conversationId: scope.conversationId?.toLowerCase() ?? null,
  });
}
