import type { Logger } from '@roster/config';
import { isUuid, type Database, type Scope, type Transaction } from '@roster/db';
import { RosterError } from '@roster/errors';
import { appendEvent, maxTextLength, redactSecrets, validateText, type Memory, type SearchResult } from '@roster/memory';
import { runInTurn, type TurnContext } from './context.js';
import { agentNameSource, createDirectory, type Agent, type Channel, type Directory, type Person } from './directory.js';
import type { Engine, EnginePart, EngineToolCall } from './engine.js';
import { InvalidInputError } from './errors.js';
import { historyMessages, memoryBlock, systemPrefix, type StoredMessage } from './prompt.js';
import { detectSignals, type LearningSignal } from './signals.js';
import { memoryTools, type ToolHost } from './tools.js';

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
  /** The stored inbound message. */
  messageId: string;
  conversationId: string;
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
   * events as for any forget), after the owner typed its name to confirm.
   */
  purgeAgent(name: string, confirmation: string): Promise<{ facts: number }>;
}

interface Binding {
  id: string | null;
  agentId: string | null;
  policy: 'pairing' | 'allowlist' | 'open';
  allowlist: string[];
}

interface ConversationRow {
  id: string;
  kind: 'dm' | 'group';
  mode: 'solo' | 'team';
  agent_id: string | null;
}

export function createCore(options: CoreOptions): Core {
  const { database, memory } = options;
  const directory = createDirectory(database);
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

  async function bindingFor(tx: Transaction, channel: Channel, account: string): Promise<Binding> {
    const { rows } = await tx.query<{ id: string; agent_id: string | null; policy: Binding['policy']; allowlist: string[] }>(
      'select id, agent_id, policy, allowlist from channel_bindings where channel = $1 and account = $2',
      [channel, account],
    );
    const row = rows[0];
    if (row !== undefined) return { id: row.id, agentId: row.agent_id, policy: row.policy, allowlist: row.allowlist };
    // The local doors serve the owner's people; a channel without a binding pairs first.
    return { id: null, agentId: null, policy: 'pairing', allowlist: [] };
  }

  async function storeMessage(
    tx: Transaction,
    message: { conversationId: string; externalId: string | null; role: 'person' | 'agent' | 'system'; personId: string | null; agentId: string | null; text: string; untrusted?: boolean },
  ): Promise<{ id: string; duplicate: boolean }> {
    const redacted = redactSecrets(message.text);
    const { rows } = await tx.query<{ id: string }>(
      `insert into messages (conversation_id, external_id, role, person_id, agent_id, content, redacted, untrusted)
       values ($1, $2, $3, $4, $5, $6, $7, $8)
       on conflict (conversation_id, external_id) do nothing
       returning id`,
      [message.conversationId, message.externalId, message.role, message.personId, message.agentId, redacted.text, redacted.kinds.length > 0, message.untrusted === true],
    );
    if (rows[0] !== undefined) {
      await tx.query('update conversations set last_message_at = now() where id = $1', [message.conversationId]);
      return { id: rows[0].id, duplicate: false };
    }
    const existing = await tx.query<{ id: string }>('select id from messages where conversation_id = $1 and external_id = $2', [
      message.conversationId,
      message.externalId,
    ]);
    return { id: existing.rows[0]!.id, duplicate: true };
  }

  async function activeLessons(scope: Scope): Promise<string[]> {
    return database.withScope(scope, async (tx) => {
      const { rows } = await tx.query<{ text: string }>(`select text from lessons where status = 'active' order by approved_at, id`);
      return rows.map((row) => row.text);
    });
  }

  async function recentHistory(conversationId: string, beforeMessageId: string): Promise<StoredMessage[]> {
    return database.adminScope('core: read the conversation history', async (tx) => {
      const { rows } = await tx.query<{ role: StoredMessage['role']; content: string; person_name: string | null; agent_id: string | null; agent_name: string | null }>(
        `select m.role, m.content, p.name as person_name, m.agent_id, a.name as agent_name
         from messages m left join people p on p.id = m.person_id left join agents a on a.id = m.agent_id
         where m.conversation_id = $1 and m.forgotten_at is null and m.id <> $2
           and m.created_at <= (select created_at from messages where id = $2)
         order by m.created_at desc, m.id desc limit 40`,
        [conversationId, beforeMessageId],
      );
      return rows.reverse().map((row) => ({ role: row.role, content: row.content, personName: row.person_name, agentId: row.agent_id, agentName: row.agent_name }));
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
    const history = context.depth === 0 ? historyMessages(await recentHistory(context.conversationId, context.messageId), agent.id, historyTokens) : [];
    const tools = scope === null ? [] : memoryTools(host).filter((tool) => withColleagues || tool.name !== 'ask_agent');
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
      await database.withScope(context.scope!, async (tx) => {
        await tx.query(
          `insert into learning_events (agent_id, person_id, conversation_id, message_id, kind, text, actor_kind, channel)
           values ($1, $2, $3, $4, 'feedback', $5, 'agent', $6)`,
          [context.agent.id, context.scope!.personId, context.conversationId, context.messageId, redactSecrets(`${rating}: ${comment}`).text.slice(0, 4000), context.channel],
        );
      });
    },
    async proposeLesson(context, text, evidence) {
      const clean = redactSecrets(validateText(text, 'lesson')).text;
      return database.withScope(context.scope!, async (tx) => {
        const { rows } = await tx.query<{ id: string }>(
          `insert into approvals (agent_id, kind, text, evidence, proposed_by_kind, proposed_by)
           values ($1, 'lesson', $2, $3, 'agent', $4) returning id`,
          [context.agent.id, clean, JSON.stringify(evidence === undefined ? [] : [{ note: redactSecrets(evidence).text, messageId: context.messageId }]), context.agent.name],
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

    // 1. Store the message once, resolve the person and the conversation.
    const stored = await database.adminScope('core: store an inbound message', async (tx) => {
      const binding = await bindingFor(tx, inbound.channel, inbound.account ?? 'default');
      let person: Person | null = null;
      if (inbound.sender.personId !== undefined) {
        const { rows } = await tx.query<Person>('select id, name, role from people where id = $1', [inbound.sender.personId]);
        if (rows[0] === undefined) throw new RosterError('person_not_found', 'No such person.');
        person = rows[0];
      } else if (inbound.sender.externalId !== undefined) {
        const { rows } = await tx.query<Person>(
          'select p.id, p.name, p.role from identities i join people p on p.id = i.person_id where i.channel = $1 and i.external_id = $2',
          [inbound.channel, inbound.sender.externalId],
        );
        person = rows[0] ?? null;
      }
      const conversation = await tx.query<ConversationRow>(
        `insert into conversations (channel, external_id, kind, binding_id, person_id, agent_id)
         values ($1, $2, $3, $4, $5, $6)
         on conflict (channel, external_id) do update set channel = excluded.channel
         returning id, kind, mode, agent_id`,
        [inbound.channel, inbound.conversation.externalId, inbound.conversation.kind, binding.id, inbound.conversation.kind === 'dm' ? person?.id ?? null : null, binding.agentId],
      );
      const row = conversation.rows[0]!;
      const message = await storeMessage(tx, {
        conversationId: row.id,
        externalId: inbound.externalMessageId ?? null,
        role: 'person',
        personId: person?.id ?? null,
        agentId: null,
        text: inbound.quoted === undefined ? text : `${text}\n\n[quoted]\n${inbound.quoted}`,
        untrusted: inbound.quoted !== undefined,
      });
      return { binding, person, conversation: row, message };
    });
    const base = { messageId: stored.message.id, conversationId: stored.conversation.id, person: stored.person };
    if (stored.message.duplicate) return { ...base, duplicate: true, replies: [], notice: null, signals: [] };

    const notice = async (message: string): Promise<TurnResult> => {
      await database.adminScope('core: store a notice', (tx) =>
        storeMessage(tx, { conversationId: stored.conversation.id, externalId: null, role: 'system', personId: null, agentId: null, text: message }),
      );
      return { ...base, duplicate: false, replies: [], notice: message, signals: [] };
    };

    // 2. A stranger: link, pair, or (open policy) talk without memory.
    let person = stored.person;
    const local = inbound.channel === 'cli' || inbound.channel === 'web';
    if (person === null) {
      const link = /^\/link\s+([A-Za-z0-9]{8})\s*$/.exec(text);
      if (link !== null && inbound.sender.externalId !== undefined) {
        try {
          const linked = await directory.redeemLinkCode(link[1]!, inbound.channel, inbound.sender.externalId, inbound.sender.displayName);
          return notice(`Linked: you are ${linked.name} here now.`);
        } catch (error) {
          if (RosterError.isInstance(error)) return notice(error.message);
          throw error;
        }
      }
      const allowed = stored.binding.policy === 'open' || (stored.binding.policy === 'allowlist' && stored.binding.allowlist.includes(inbound.sender.externalId ?? ''));
      if (local || !allowed) {
        if (stored.binding.policy === 'allowlist') return { ...base, duplicate: false, replies: [], notice: null, signals: [] };
        return notice("I don't know you yet. Ask the owner for a link code, then send /link CODE.");
      }
    }

    // 3. Pick the agent(s).
    let body = text;
    let agents: Agent[];
    const switchTo = new RegExp(`^/agent\\s+(${agentNameSource})(?:\\s+([\\s\\S]*))?$`, 'u').exec(text);
    if (switchTo !== null) {
      const agent = await directory.agentByName(switchTo[1]!);
      await database.adminScope('core: switch the conversation’s agent', (tx) =>
        tx.query('update conversations set agent_id = $2 where id = $1', [stored.conversation.id, agent.id]),
      );
      if (switchTo[2] === undefined || switchTo[2].trim() === '') return notice(`Now talking to ${agent.name}.`);
      body = switchTo[2].trim();
      agents = [agent];
    } else {
      agents = await chooseAgents(stored.conversation, stored.binding, body, turn);
      if (agents.length === 0) {
        const names = (await directory.listAgents()).map((agent) => agent.name);
        return notice(names.length === 0 ? 'There are no agents yet: the owner adds one with roster agent add.' : `Which agent? Say /agent NAME (one of ${names.join(', ')}), or @mention one.`);
      }
    }

    // 4. Learning signals, once, from the person's own words, under each addressed agent.
    const signals = person === null ? [] : detectSignals(body, inbound.rating);
    if (person !== null && signals.length > 0) {
      for (const agent of agents) {
        await database.withScope({ agentId: agent.id, personId: person.id, audience: 'private' }, async (tx) => {
          for (const signal of signals) {
            await tx.query(
              `insert into learning_events (agent_id, person_id, conversation_id, message_id, kind, text, actor_kind, channel)
               values ($1, $2, $3, $4, $5, $6, 'person', $7)`,
              [agent.id, person!.id, stored.conversation.id, stored.message.id, signal.kind, redactSecrets(body).text.slice(0, 4000), inbound.channel],
            );
          }
        });
      }
    }

    // 5. Each agent, concurrently, in its own scope.
    const untrusted = inbound.quoted !== undefined;
    const explicitRemember = signals.some((signal) => signal.kind === 'remember');
    const replies = await Promise.all(
      agents.map(async (agent) => {
        const scope: Scope | null =
          person === null ? null : { agentId: agent.id, personId: person.id, audience: stored.conversation.kind === 'group' ? 'group' : 'private' };
        const context: TurnContext = {
          agent,
          scope,
          person,
          conversationId: stored.conversation.id,
          messageId: stored.message.id,
          channel: inbound.channel,
          untrusted,
          explicitRemember,
          depth: 0,
        };
        let answer: { text: string; toolCalls: EngineToolCall[] };
        try {
          answer = await runAgent(agent, context, body, stored.conversation.kind, turn, true);
        } catch (error) {
          log?.error({ err: error, agent: agent.name }, 'engine failed');
          const reason = RosterError.isInstance(error) ? error.message : 'its engine failed';
          answer = { text: `${agent.name} could not answer: ${reason}`, toolCalls: [] };
        }
        const reply = await database.adminScope('core: store a reply', (tx) =>
          storeMessage(tx, { conversationId: stored.conversation.id, externalId: null, role: 'agent', personId: null, agentId: agent.id, text: answer.text }),
        );
        // 6. Follow-up jobs, in the agent's scope, written with the turn.
        if (scope !== null) {
          await database.withScope(scope, async (tx) => {
            await enqueue(tx, 'extract', 'extract-conversation', { conversationId: stored.conversation.id, agentId: agent.id, personId: person!.id }, `extract:${stored.conversation.id}:${agent.id}:${stored.message.id}`, agent.id);
            if (signals.length > 0) {
              await enqueue(tx, 'harvest', 'harvest-agent', { agentId: agent.id }, `harvest:${agent.id}:${stored.message.id}`, agent.id);
            }
          });
        }
        return { agent: agent.name, agentId: agent.id, text: answer.text, toolCalls: answer.toolCalls, messageId: reply.id };
      }),
    );
    return { ...base, duplicate: false, replies, notice: null, signals };
  }

  async function enqueue(tx: Transaction, queue: string, name: string, payload: Record<string, unknown>, dedupeKey: string, agentId: string): Promise<void> {
    await tx.query(
      `insert into outbox (queue, name, payload, dedupe_key, agent_id) values ($1, $2, $3, $4, $5) on conflict (dedupe_key) do nothing`,
      [queue, name, JSON.stringify(payload), dedupeKey, agentId],
    );
  }

  async function chooseAgents(conversation: ConversationRow, binding: Binding, text: string, turn: TurnOptions): Promise<Agent[]> {
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

  async function purgeAgent(name: string, confirmation: string): Promise<{ facts: number }> {
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
    await database.adminScope('owner: record a purge', (tx) =>
      appendEvent(tx, { agentId: agent.id, personId: null, actor: owner.actor, action: 'purge', targetKind: 'agent', targetId: agent.id, detail: { facts: forgotten } }),
    );
    return { facts: forgotten };
  }

  return {
    directory,
    purgeAgent,
    handle(inbound, turn = {}) {
      return inOrder(`${inbound.channel}:${inbound.conversation.externalId}`, () => handleInOrder(inbound, turn));
    },
  };
}
