import type { Logger } from '@roster/config';
import { isUuid, type Database, type Scope, type Transaction } from '@roster/db';
import { RosterError } from '@roster/errors';
import { maxTextLength, redactSecrets, validateText, type Memory, type SearchResult } from '@roster/memory';
import { runInTurn, type TurnContext } from './context.js';
import { agentNameSource, createDirectory, type Agent, type Channel, type Directory, type Person } from './directory.js';
import type { Engine, EnginePart, EngineToolCall } from './engine.js';
import { InvalidInputError } from './errors.js';
import { historyMessages, memoryBlock, systemPrefix, type StoredMessage } from './prompt.js';
import { detectSignals, type LearningSignal } from './signals.js';
import { memoryTools, type ToolHost } from './tools.js';
import { ConversationStore, type Binding, type ConversationRow, type Visibility } from './conversation-store.js';
import { LearningEventStore } from './learning-event-store.js';

/** What a colleague may use inside `ask_agent`: reading, never writing. */
const readOnlyTools: ReadonlySet<string> = new Set(['recall']);

/** A platform event, as an adapter (or the web page, or the CLI) hands it to the core. */
export interface InboundMessage {
  channel: Channel;
  /** The bot account it arrived on; its binding decides the agent and the access policy. */
  account?: string;
  conversation: { externalId: string; kind: 'dm' | 'group' };
  /**
   * Who sent it. Channels give the platform's handle (`externalId`); the local
   * doors that authenticate the owner's people themselves (CLI, web) give `personId`.
   */
  sender: { externalId?: string; personId?: string; displayName?: string };
  /** The platform's id of this message: a redelivery with the same id is processed once. */
  externalMessageId?: string;
  text: string;
  /** Content from outside the conversation (a forwarded page, a file): never scanned for signals; marks the turn untrusted. */
  quoted?: string;
  /** A rating the platform carries (a reaction, a button). */
  rating?: 'negative' | 'positive';
}

export interface TurnOptions {
  /** Talk to this agent (the CLI's --agent). */
  agent?: string;
  /** All active agents answer. */
  team?: boolean;
  /** Streamed parts of each agent's reply. */
  onPart?: (agent: string, part: EnginePart) => void;
  signal?: AbortSignal;
}

export interface Reply {
  agent: string;
  agentId: string;
  text: string;
  toolCalls: EngineToolCall[];
  messageId: string;
}

export interface TurnResult {
  /** The stored inbound message; null when nothing was kept (a sender the access policy refused, a link code). */
  messageId: string | null;
  conversationId: string | null;
  /** The same platform message was handled before: nothing was done again. */
  duplicate: boolean;
  person: Person | null;
  replies: Reply[];
  /** A reply from Roster itself (pairing, /agent switch), not from an agent. */
  notice: string | null;
  signals: LearningSignal[];
}

export interface CoreOptions {
  database: Database;
  memory: Memory;
  /** The engine an agent runs on. */
  engineFor: (agent: Agent) => Engine;
  logger?: Logger;
  /** History the engine sees, in estimated tokens (default 1,500). */
  historyTokens?: number;
  /** Facts placed in the memory block, in estimated tokens (default 800). */
  memoryTokens?: number;
}

/** The longest message the core accepts, in characters: the longest text memory takes, so one limit holds everywhere. */
export const maxMessageLength = maxTextLength;

/**
 * The conversation core: one road for every door. It stores the message once,
 * resolves the person, applies the access policy, picks the agents, records
 * learning signals once, runs each agent in its own scope, and stores replies.
 */
export interface Core {
  readonly directory: Directory;
  handle(inbound: InboundMessage, options?: TurnOptions): Promise<TurnResult>;
  /**
   * Forget every fact of an archived agent, in every scope (tombstones and
   * events as for any forget), then erase the words of everything else it
   * holds (messages, learning events, mirror cases and runs, episodes,
   * lessons, approvals, pending jobs), after the owner typed its name to
   * confirm. Its row stays, marked purged, for the audit; its name is free.
   */
  purgeAgent(name: string, confirmation: string): Promise<{ facts: number; erased: Record<string, number> }>;
}

export function createCore(options: CoreOptions): Core {
  const { database, memory } = options;
  const directory = createDirectory(database);
  const conversations = new ConversationStore(database);
  const learning = new LearningEventStore(database);
  const historyTokens = options.historyTokens ?? 1500;
  const memoryTokens = options.memoryTokens ?? 800;
  const log = options.logger?.child({ component: 'core' });
  /** Messages of one conversation are handled in order; different conversations run in parallel. */
  const queues = new Map<string, Promise<unknown>>();

  function inOrder<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = queues.get(key) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(fn);
    queues.set(key, next);
    void next.finally(() => {
      if (queues.get(key) === next) queues.delete(key);
    }).catch(() => undefined);
    return next;
  }

  async function activeLessons(scope: Scope): Promise<string[]> {
    return database.withScope(scope, async (tx) => {
      const { rows } = await tx.query<{ text: string }>(`select text from lessons where status = 'active' order by approved_at, id`);
      return rows.map((row) => row.text);
    });
  }

  async function runAgent(agent: Agent, context: TurnContext, text: string, kind: 'dm' | 'group', turn: TurnOptions, withColleagues: boolean): Promise<{ text: string; toolCalls: EngineToolCall[] }> {
    const engine = options.engineFor(agent);
    const scope = context.scope;
    const lessons = scope === null ? [] : await activeLessons(scope);
    let facts: SearchResult[] = [];
    if (scope !== null) {
      try {
        facts = await memory.search(scope, text, { limit: 8, tokenBudget: memoryTokens });
      } catch (error) {
        log?.warn({ err: error, agent: agent.name }, 'memory search failed; answering without it');
      }
    }
    const history = context.depth === 0 && scope !== null ? historyMessages(await conversations.history(scope, context.messageId), agent.id, historyTokens) : [];
    // A colleague answers from what it knows and changes nothing: read-only tools.
    const tools = scope === null ? [] : memoryTools(host).filter((tool) => (context.depth === 0 ? withColleagues || tool.name !== 'ask_agent' : readOnlyTools.has(tool.name)));
    const result = await runInTurn(context, () =>
      engine.run({
        system: systemPrefix(agent, lessons, tools.length > 0),
        memory: memoryBlock({ person: context.person, channel: context.channel, kind, facts }),
        history,
        message: text,
        tools,
        ...(turn.signal === undefined ? {} : { signal: turn.signal }),
        ...(turn.onPart === undefined ? {} : { onPart: (part: EnginePart) => turn.onPart?.(agent.name, part) }),
      }),
    );
    return { text: result.text, toolCalls: result.toolCalls };
  }

  const host: ToolHost = {
    memory,
    async recordFeedback(context, rating, comment) {
      await learning.recordFeedback(context.scope!, { messageId: context.messageId, rating, comment, channel: context.channel });
    },
    async proposeLesson(context, text, evidence) {
      const clean = redactSecrets(validateText(text, 'lesson')).text;
      return database.withScope(context.scope!, async (tx) => {
        const { rows } = await tx.query<{ id: string }>(
          `insert into approvals (agent_id, person_id, kind, text, evidence, proposed_by_kind, proposed_by)
           values ($1, $2, 'lesson', $3, $4, 'agent', $5) returning id`,
          [context.agent.id, context.scope!.personId, clean, JSON.stringify(evidence === undefined ? [] : [{ note: redactSecrets(evidence).text, messageId: context.messageId }]), context.agent.name],
        );
        return { approvalId: rows[0]!.id };
      });
    },
    async askColleague(context, colleagueName, question) {
      if (context.depth > 0) throw new RosterError('colleague_depth', 'A colleague cannot ask another colleague in turn.');
      const colleague = await directory.agentByName(colleagueName);
      if (colleague.id === context.agent.id) throw new RosterError('colleague_self', 'Ask another agent, not yourself.');
      if (colleague.status !== 'active') throw new RosterError('agent_archived', `${colleague.name} is archived.`);
      // The colleague answers in its own scope, agent-wide knowledge only: no person, no private facts.
      const colleagueContext: TurnContext = {
        ...context,
        agent: colleague,
        scope: { agentId: colleague.id, personId: null, audience: 'agent' },
        person: null,
        explicitRemember: false,
        depth: 1,
      };
      const answer = await runAgent(colleague, colleagueContext, `${context.agent.name} asks: ${question}`, 'dm', {}, false);
      return { agent: colleague.name, answer: answer.text };
    },
  };

  async function handleInOrder(inbound: InboundMessage, turn: TurnOptions): Promise<TurnResult> {
    let text: string;
    try {
      text = validateText(inbound.text, 'message');
    } catch (error) {
      if (RosterError.isInstance(error) && error.code === 'memory_input_invalid' && (error as { reason?: string }).reason === 'too-long') {
        throw new InvalidInputError(`The message is too long; the most is ${maxMessageLength.toLocaleString('en')} characters.`);
      }
      throw error;
    }
    if (inbound.sender.personId !== undefined && !isUuid(inbound.sender.personId)) throw new InvalidInputError('sender.personId must be a person id.');
    const account = inbound.account ?? 'default';
    const local = inbound.channel === 'cli' || inbound.channel === 'web';

    const linkCode = inbound.sender.externalId === undefined ? undefined : /^\/link\s+([A-Za-z0-9]{8})\s*$/.exec(text)?.[1];

    // 1. Resolve the sender and the binding; for a sender let in, open the conversation and take its turn, in one transaction.
    const routed = await database.adminScope('core: route an inbound message', async (tx) => {
      const binding = await conversations.bindingFor(tx, inbound.channel, account);
      const person = await conversations.resolveSender(tx, inbound.channel, inbound.sender);
      const allowed = binding.policy === 'open' || (binding.policy === 'allowlist' && binding.allowlist.includes(inbound.sender.externalId ?? ''));
      if (person === null && (linkCode !== undefined || local || !allowed)) return { binding, person, conversation: null, held: false };
      const conversation = await conversations.openConversation(tx, { channel: inbound.channel, externalId: inbound.conversation.externalId, kind: inbound.conversation.kind, binding, person });
      return { binding, person, conversation, held: await conversations.takeTurn(tx, conversation.id) };
    });

    // 2. A stranger who is not let in links a code, or gets at most the pairing hint; nothing they said is kept.
    if (routed.conversation === null) {
      const unkept = { messageId: null, conversationId: null, duplicate: false, person: null, replies: [], signals: [] };
      if (linkCode !== undefined) {
        try {
          const linked = await directory.redeemLinkCode(linkCode, inbound.channel, inbound.sender.externalId!, inbound.sender.displayName);
          return { ...unkept, notice: `Linked: you are ${linked.name} here now.` };
        } catch (error) {
          if (RosterError.isInstance(error)) return { ...unkept, notice: error.message };
          throw error;
        }
      }
      await conversations.countRefused(inbound.channel, account);
      if (routed.binding.policy === 'allowlist') return { ...unkept, notice: null };
      return { ...unkept, notice: "I don't know you yet. Ask the owner for a link code, then send /link CODE." };
    }

    // The conversation's turn is this process's until the replies are stored.
    const release = await conversations.holdTurn(routed.conversation.id, routed.held, turn.signal);
    try {
      return await handleTurn(inbound, turn, text, routed.binding, routed.person, routed.conversation);
    } finally {
      await release();
    }
  }

  async function handleTurn(inbound: InboundMessage, turn: TurnOptions, text: string, binding: Binding, person: Person | null, conversation: ConversationRow): Promise<TurnResult> {
    // 3. Store the message once.
    const message = await database.adminScope('core: store an inbound message', (tx) =>
      conversations.storeMessage(tx, {
        conversationId: conversation.id,
        externalId: inbound.externalMessageId ?? null,
        role: 'person',
        personId: person?.id ?? null,
        agentId: null,
        text: inbound.quoted === undefined ? text : `${text}\n\n[quoted]\n${inbound.quoted}`,
        visibility: 'conversation',
        untrusted: inbound.quoted !== undefined,
      }),
    );
    const base = { messageId: message.id, conversationId: conversation.id, person };
    if (message.duplicate) return { ...base, duplicate: true, replies: [], notice: null, signals: [] };

    const notice = async (words: string): Promise<TurnResult> => {
      await conversations.storeNotice(conversation.id, person?.id ?? null, words);
      return { ...base, duplicate: false, replies: [], notice: words, signals: [] };
    };

    // 4. Pick the agent(s).
    let body = text;
    let agents: Agent[];
    let team = turn.team === true || conversation.mode === 'team';
    const switchTo = new RegExp(`^/agent\\s+(${agentNameSource})(?:\\s+([\\s\\S]*))?$`, 'u').exec(text);
    if (switchTo !== null) {
      const agent = await directory.agentByName(switchTo[1]!);
      await conversations.switchAgent(conversation.id, agent.id);
      if (switchTo[2] === undefined || switchTo[2].trim() === '') return notice(`Now talking to ${agent.name}.`);
      body = switchTo[2].trim();
      agents = [agent];
      team = false;
    } else {
      agents = await chooseAgents(conversation, binding, body, turn);
      if (agents.length === 0) {
        const names = (await directory.listAgents()).map((agent) => agent.name);
        return notice(names.length === 0 ? 'There are no agents yet: the owner adds one with roster agent add.' : `Which agent? Say /agent NAME (one of ${names.join(', ')}), or @mention one.`);
      }
    }
    // A one-to-one message to one agent is that pair's alone; in a group or in team mode it is said to everyone there.
    const visibility: Visibility = conversation.kind === 'dm' && !team && agents.length === 1 && person !== null ? 'pair' : 'conversation';
    await conversations.addressMessage(message.id, { agentId: visibility === 'pair' ? agents[0]!.id : null, visibility });

    // 5. Learning signals, once, from the person's own words, under each addressed agent.
    const signals = person === null ? [] : detectSignals(body, inbound.rating);
    if (person !== null && signals.length > 0) {
      for (const agent of agents) {
        await learning.record(
          { agentId: agent.id, personId: person.id, audience: conversation.kind === 'group' ? 'group' : 'private', conversationId: conversation.id },
          { messageId: message.id, signals, text: body, channel: inbound.channel },
        );
      }
    }

    // 6. Each agent, concurrently, in its own scope.
    const untrusted = inbound.quoted !== undefined;
    const explicitRemember = signals.some((signal) => signal.kind === 'remember');
    const replies = await Promise.all(
      agents.map(async (agent) => {
        const scope: Scope | null =
          person === null
            ? null
            : { agentId: agent.id, personId: person.id, audience: conversation.kind === 'group' ? 'group' : 'private', conversationId: conversation.id };
        const context: TurnContext = {
          agent,
          scope,
          person,
          conversationId: conversation.id,
          messageId: message.id,
          channel: inbound.channel,
          untrusted,
          explicitRemember,
          depth: 0,
        };
        let answer: { text: string; toolCalls: EngineToolCall[] };
        try {
          answer = await runAgent(agent, context, body, conversation.kind, turn, true);
        } catch (error) {
          log?.error({ err: error, agent: agent.name }, 'engine failed');
          const reason = RosterError.isInstance(error) ? error.message : 'its engine failed';
          answer = { text: `${agent.name} could not answer: ${reason}`, toolCalls: [] };
        }
        const replyId = await conversations.storeReply(scope, { conversationId: conversation.id, agentId: agent.id, text: answer.text, visibility });
        // 7. Follow-up jobs, in the agent's scope, written with the turn.
        if (scope !== null) {
          await database.withScope(scope, async (tx) => {
            await conversations.enqueue(tx, {
              queue: 'extract',
              name: 'extract-conversation',
              payload: { conversationId: conversation.id, agentId: agent.id, personId: person!.id },
              dedupeKey: `extract:${conversation.id}:${agent.id}:${message.id}`,
              agentId: agent.id,
              personId: person!.id,
            });
            if (signals.length > 0) {
              await conversations.enqueue(tx, {
                queue: 'harvest',
                name: 'harvest-agent',
                payload: { agentId: agent.id },
                dedupeKey: `harvest:${agent.id}:${message.id}`,
                agentId: agent.id,
                personId: person!.id,
              });
            }
          });
        }
        return { agent: agent.name, agentId: agent.id, text: answer.text, toolCalls: answer.toolCalls, messageId: replyId };
      }),
    );
    return { ...base, duplicate: false, replies, notice: null, signals };
  }

  async function chooseAgents(conversation: ConversationRow, binding: Binding, text: string, turn: TurnOptions): Promise<Agent[]> {
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

  async function purgeAgent(name: string, confirmation: string): Promise<{ facts: number; erased: Record<string, number> }> {
    const agent = await directory.agentByName(name);
    if (agent.status !== 'archived') throw new RosterError('agent_active', `Archive ${agent.name} first (roster agent archive ${agent.name}); only an archived agent can be purged.`);
    if (confirmation !== agent.name) throw new RosterError('purge_unconfirmed', `To purge ${agent.name}'s memory for good, confirm with its exact name: --confirm ${agent.name}.`);
    const facts = await database.adminScope('owner: list the facts of an agent to purge', async (tx) => {
      const { rows } = await tx.query<{ id: string; person_id: string | null }>(
        `select id, person_id from facts where agent_id = $1 and trust <> 'forgotten' order by recorded_at`,
        [agent.id],
      );
      return rows;
    });
    let forgotten = 0;
    const owner = { actor: { kind: 'owner' as const, id: 'purge' } };
    for (const fact of facts) {
      const scope: Scope = fact.person_id === null ? { agentId: agent.id, personId: null, audience: 'agent' } : { agentId: agent.id, personId: fact.person_id, audience: 'private' };
      try {
        await memory.forget(scope, fact.id, owner);
        forgotten += 1;
      } catch (error) {
        // Already forgotten as part of an identical fact's forget.
        if (!(RosterError.isInstance(error) && error.code === 'fact_state')) throw error;
      }
    }
    // Then every other copy of what the agent heard and said; its row stays, for the audit.
    const erased = await database.adminScope('owner: purge an agent', async (tx) => {
      const { rows } = await tx.query<{ counts: Record<string, number> }>('select roster_purge_agent($1) as counts', [agent.id]);
      const counts = rows[0]!.counts;
      await memory.audit.append(tx, { agentId: agent.id, personId: null, actor: owner.actor, action: 'purge', targetKind: 'agent', targetId: agent.id, detail: { facts: forgotten, erased: counts } });
      return counts;
    });
    return { facts: forgotten, erased };
  }

  return {
    directory,
    purgeAgent,
    handle(inbound, turn = {}) {
      return inOrder(`${inbound.channel}:${inbound.conversation.externalId}`, () => handleInOrder(inbound, turn));
    },
  };
}
