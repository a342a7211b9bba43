import { RosterError } from '@roster/errors';
import type { Binding, ConversationRow } from './conversation-store.js';
import { agentNameSource, type Agent } from './directory.js';
import { InvalidInputError, NotFoundError } from './errors.js';
import type { TurnOptions } from './types.js';

/** `/agent NAME [message]`: switch the conversation's agent, and optionally say something to it. */
export const agentSwitchPattern = new RegExp(`^/agent\\s+(${agentNameSource})(?:\\s+([\\s\\S]*))?$`, 'u');

/**
 * Who answers a message: the team (every active agent) in team mode; the
 * agent asked for; those @mentioned; the conversation's or the binding's
 * agent; the only agent there is; or nobody (the person is asked which).
 * `active` and `named` (the agent the door asked for) come with the route.
 */
export function chooseAgents(active: readonly Agent[], named: Agent | null, conversation: ConversationRow, binding: Binding, text: string, turn: TurnOptions): Agent[] {
  if (turn.team === true && turn.agent !== undefined) throw new InvalidInputError('Talk to one agent or to the team, not both.');
  if (turn.team === true || conversation.mode === 'team') return [...active];
  if (turn.agent !== undefined) {
    if (named === null) throw new NotFoundError('agent_not_found', `No agent named ${JSON.stringify(turn.agent)}. roster agent list shows them.`);
    if (named.status !== 'active') throw new RosterError('agent_archived', `${named.name} is archived; the owner can restore it: roster agent restore ${named.name}.`);
    return [named];
  }
  const mentioned = active.filter((agent) => new RegExp(`(^|\\s)@${agent.name}(?![\\p{L}\\p{M}\\p{N}_-])`, 'iu').test(text.normalize('NFC')));
  if (mentioned.length > 0) return mentioned;
  const bound = conversation.agent_id ?? binding.agentId;
  if (bound !== null) {
    const agent = active.find((candidate) => candidate.id === bound);
    if (agent !== undefined) return [agent];
  }
  return active.length === 1 ? [...active] : [];
}
