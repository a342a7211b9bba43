import { RosterError } from '@roster/errors';
import type { Binding, ConversationRow } from './conversation-store.js';
import { agentNameSource, type Agent, type Directory } from './directory.js';
import { InvalidInputError } from './errors.js';
import type { TurnOptions } from './types.js';

/** `/agent NAME [message]`: switch the conversation's agent, and optionally say something to it. */
export const agentSwitchPattern = new RegExp(`^/agent\\s+(${agentNameSource})(?:\\s+([\\s\\S]*))?$`, 'u');

/**
 * Who answers a message: the team (every active agent) in team mode; the
 * agent asked for; those @mentioned; the conversation's or the binding's
 * agent; the only agent there is; or nobody (the person is asked which).
 */
export async function chooseAgents(directory: Directory, conversation: ConversationRow, binding: Binding, text: string, turn: TurnOptions): Promise<Agent[]> {
  if (turn.team === true && turn.agent !== undefined) throw new InvalidInputError('Talk to one agent or to the team, not both.');
  const active = await directory.listAgents();
  if (turn.team === true || conversation.mode === 'team') return active;
  if (turn.agent !== undefined) {
    const agent = await directory.agentByName(turn.agent);
    if (agent.status !== 'active') throw new RosterError('agent_archived', `${agent.name} is archived; the owner can restore it: roster agent restore ${agent.name}.`);
    return [agent];
  }
  const mentioned = active.filter((agent) => new RegExp(`(^|\\s)@${agent.name}(?![\\p{L}\\p{M}\\p{N}_-])`, 'iu').test(text.normalize('NFC')));
  if (mentioned.length > 0) return mentioned;
  const bound = conversation.agent_id ?? binding.agentId;
  if (bound !== null) {
    const agent = active.find((candidate) => candidate.id === bound);
    if (agent !== undefined) return [agent];
  }
  return active.length === 1 ? active : [];
}
