import type { Scope } from '@roster/db';
import { closeMatches, type Memory } from '@roster/memory';
import type { Binding, ConversationRow, ConversationStore } from './conversation-store.js';
import type { Agent, Channel, Directory, Person } from './directory.js';
import { chooseAgents } from './routing.js';
import type { TurnOptions } from './types.js';

/**
 * The commands every door understands, written `/name [words]`. `/agent NAME`
 * (routing) and a well-formed `/link CODE` (before anything is stored) are
 * handled where they act; these are the rest. A door whose platform keeps `/` for itself
 * (Slack: `/roster agents`) rewrites its form into this one.
 */
export type CommandName = 'agents' | 'team' | 'memory' | 'forget' | 'help' | 'link';

const commandPattern = /^\/(agents|agent|team|memory|forget|help|link)(?:\s+([\s\S]*))?$/u;

/** A command in a message's text, or null when the text is not one. `/agent` alone lists the agents. */
export function parseCommand(text: string): { name: CommandName; words: string } | null {
  const match = commandPattern.exec(text.trim());
  if (match === null) return null;
  const words = (match[2] ?? '').trim();
  if (match[1] === 'agent') return words === '' ? { name: 'agents', words } : null;
  return { name: match[1] as CommandName, words };
}

/** What a command answers, and whether the answer may be kept in the transcript (never when it repeats memory). */
export interface CommandAnswer {
  text: string;
  keep: boolean;
  /** The agent the command acted for, when one: the command is that pair's alone in a one-to-one chat. */
  agentId: string | null;
}

export interface CommandContext {
  name: CommandName;
  words: string;
  channel: Channel;
  messageId: string;
  person: Person | null;
  binding: Binding;
  conversation: ConversationRow;
  turn: TurnOptions;
}

export interface CommandDependencies {
  directory: Directory;
  memory: Memory;
  conversations: ConversationStore;
}

/** What a stranger's /memory or /forget gets, in the channel's own command form. */
function strangerMemory(prefix: string): string {
  return `No memory is kept for you here: this handle is not linked to a person. Ask the owner for a link code, then send ${prefix}link CODE.`;
}

/** All a stranger is told under the `pairing` policy, whatever they sent. */
export function pairingHint(prefix = '/'): string {
  return `I don't know you yet. Ask the owner for a link code, then send ${prefix}link CODE.`;
}

/** The help text, written with the door's command prefix. */
export function helpText(prefix = '/'): string {
  const lines: Array<[string, string]> = [
    ['agents', 'the agents you can talk to'],
    ['agent NAME', 'talk to NAME from now on (add words to say something to it at once)'],
    ['team', 'talk to every agent at once'],
    ['memory', 'what this agent knows about you'],
    ['forget WORDS', 'make this agent forget what matches WORDS'],
    ['link CODE', 'tie this handle to you, with a code from the owner'],
    ['help', 'this list'],
  ];
  return ['Commands:', ...lines.map(([command, what]) => `${prefix}${command} — ${what}`), 'Anything else is said to the agent.'].join('\n');
}

/** Run one command for a sender the access policy let in; the message is already stored. */
export async function runCommand(dependencies: CommandDependencies, context: CommandContext): Promise<CommandAnswer> {
  const { directory, memory, conversations } = dependencies;
  const { conversation, person } = context;
  const prefix = context.turn.commandPrefix ?? '/';
  switch (context.name) {
    case 'help':
      return { text: helpText(prefix), keep: true, agentId: null };
    case 'link':
      // A well-formed code never gets here: it is redeemed before the message is stored.
      return { text: `A link code is 8 letters and digits, from the owner: ${prefix}link CODE.`, keep: false, agentId: null };
    case 'agents': {
      const agents = await directory.listAgents();
      if (agents.length === 0) return { text: 'There are no agents yet: the owner adds one with roster agent add.', keep: true, agentId: null };
      const current = conversation.mode === 'team' ? null : conversation.agent_id ?? context.binding.agentId;
      const lines = agents.map((agent) => `${agent.name} — ${agent.job}${conversation.mode === 'team' || agent.id === current ? ' (talking to it now)' : ''}`);
      return { text: ['Agents:', ...lines, `Say ${prefix}agent NAME to talk to one, ${prefix}team to talk to all.`].join('\n'), keep: true, agentId: null };
    }
    case 'team': {
      const agents = await directory.listAgents();
      if (agents.length === 0) return { text: 'There are no agents yet: the owner adds one with roster agent add.', keep: true, agentId: null };
      await conversations.switchToTeam(conversation.id);
      return { text: `Now talking to the team: ${agents.map((agent) => agent.name).join(', ')}. Say ${prefix}agent NAME to talk to one.`, keep: true, agentId: null };
    }
    case 'memory':
    case 'forget': {
      if (person === null) return { text: strangerMemory(prefix), keep: false, agentId: null };
      if (context.name === 'forget' && context.words === '') return { text: `Say what to forget: ${prefix}forget WORDS.`, keep: false, agentId: null };
      const named = context.turn.agent === undefined ? null : await directory.agentByName(context.turn.agent);
      const agents = chooseAgents(await directory.listAgents(), named, conversation, context.binding, context.words, context.turn);
      if (agents.length === 0) {
        const names = (await directory.listAgents()).map((agent) => agent.name);
        const text = names.length === 0 ? 'There are no agents yet.' : `Which agent? Say ${prefix}agent NAME first (one of ${names.join(', ')}).`;
        return { text, keep: true, agentId: null };
      }
      const scopeOf = (agent: Agent): Scope => ({
        agentId: agent.id,
        personId: person.id,
        audience: conversation.kind === 'group' ? 'group' : 'private',
        conversationId: conversation.id,
      });
      const answers: string[] = [];
      for (const agent of agents) {
        answers.push(context.name === 'memory' ? await listMemory(memory, agent, scopeOf(agent), conversation) : await forget(memory, agent, scopeOf(agent), context));
      }
      return { text: answers.join('\n\n'), keep: false, agentId: agents.length === 1 ? agents[0]!.id : null };
    }
  }
}

async function listMemory(memory: Memory, agent: Agent, scope: Scope, conversation: ConversationRow): Promise<string> {
  const facts = await memory.list(scope, { limit: 50 });
  const group = conversation.kind === 'group' ? ' (in a group, only what it knows for everyone; ask in a one-to-one chat for what it knows about you)' : '';
  if (facts.length === 0) return `${agent.name} knows nothing about you yet${group}.`;
  return [`What ${agent.name} knows${conversation.kind === 'group' ? '' : ' about you'}${group}:`, ...facts.map((fact) => `- ${fact.content}`)].join('\n');
}

/**
 * Forget what matches the person's words: one fact that clearly matches is
 * forgotten (every version and copy, the request too); several that match
 * about equally are listed and nothing changes; none, nothing changes.
 */
async function forget(memory: Memory, agent: Agent, scope: Scope, context: CommandContext): Promise<string> {
  const words = context.words.replace(/(^|\s)@\S+/gu, ' ').trim();
  if (words === '') return `Say what ${agent.name} should forget.`;
  const close = closeMatches(await memory.match(scope, words));
  if (close.length === 0) return `${agent.name} found nothing like that to forget.`;
  if (close.length > 1) {
    return `${agent.name} knows several things like that: ${close.map((match, index) => `${index + 1}. ${match.fact.content ?? ''}`).join(' ')} Say it again in words that fit only one; nothing was forgotten.`;
  }
  await memory.forget(scope, close[0]!.fact.id, {
    actor: { kind: 'person', id: context.person!.id },
    sourceMessageIds: [context.messageId],
    channel: context.channel,
    tool: 'forget',
    explicit: true,
  });
  return `${agent.name} forgot it.`;
}
