import type { Logger } from '@roster/config';
import { isUuid, type Database, type EnterScope, type Scope, type Transaction } from '@roster/db';
import { RosterError } from '@roster/errors';
import { normalizeText, validateText, type Memory } from '@roster/memory';
import type { AgentAnswer, AgentRunner, PromptParts } from './agent-runner.js';
import { pairingHint, parseCommand, runCommand } from './commands.js';
import type { TurnContext } from './context.js';
import { checkFence, type ConversationRow, type ConversationStore, type FollowUpJob, type Visibility } from './conversation-store.js';
import type { Agent, Directory } from './directory.js';
import type { Routed } from './route.js';
import { InvalidInputError } from './errors.js';
import type { EngineFile } from '@roster/contracts';
import { fileMarker, validateFiles } from './files.js';
import type { LearningEventStore } from './learning-event-store.js';
import { agentSwitchPattern, chooseAgents } from './routing.js';
import { detectSignals } from './signals.js';
import { maxMessageLength, type InboundMessage, type TurnObserver, type TurnOptions, type TurnOutcome, type TurnResult } from './types.js';

export interface TurnPipelineOptions {
  database: Database;
  memory: Memory;
  directory: Directory;
  conversations: ConversationStore;
  learning: LearningEventStore;
  agents: AgentRunner;
  log?: Logger;
  observer?: TurnObserver;
}

/** The inbound message as stored in the transaction that took its conversation's turn, and who it is for. */
interface Inbound {
  conversation: ConversationRow;
  message: { id: string; duplicate: boolean };
  /** The agents chosen for it; null for a command or an /agent switch, handled after. */
  agents: Agent[] | null;
  visibility?: Visibility;
  /** "Which agent?": no agent was chosen, and this was stored in the same transaction. */
  notice?: string;
}

/** The scope an agent answers a person in: the person's, private one to one, the group's in a group. */
function scopeOf(agent: Agent, person: { id: string } | null, conversation: ConversationRow): Scope | null {
  return person === null ? null : { agentId: agent.id, personId: person.id, audience: conversation.kind === 'group' ? 'group' : 'private', conversationId: conversation.id };
}

/** A failure while the agents' prompts were read in the transaction that stored the message: it is tried again without them. */
class PromptReadFailed extends Error {}

/** How one turn went, filled in as it runs, for the observer: how it ended, and each agent's engine, time and failure. */
interface Tally {
  outcome: TurnOutcome;
  answers: Array<{ engine: string; seconds: number; failure: string | null }>;
}

/**
 * The turn pipeline, in two transactions and whatever the engine's tools
 * write: route (sender, binding, conversation, turn lease), store the
 * message once, address it to the agents chosen, and read each one's prompt
 * in its own scope in one statement; the agents run; each reply is stored
 * with its follow-up jobs and the message's learning signals, which ends the
 * turn.
 */
export function createTurnPipeline(options: TurnPipelineOptions): (inbound: InboundMessage, turn: TurnOptions) => Promise<TurnResult> {
  const { database, memory, directory, conversations, learning, agents: runner, log, observer } = options;
  const runAgent = runner.run;

  /**
   * Each chosen agent's prompt, read in the transaction that stored the
   * message (handed to the agent's scope in turn, so row-level security
   * applies to each read): one round trip less per turn.
   */
  async function readPrompts(enter: EnterScope, person: { id: string } | null, stored: Inbound, text: string, queryVector: number[] | null): Promise<Map<string, PromptParts>> {
    const prompts = new Map<string, PromptParts>();
    for (const agent of stored.agents ?? []) {
      const scope = scopeOf(agent, person, stored.conversation);
      if (scope === null) continue;
      const prepared = await runner.preparePrompt(agent, scope, stored.message.id, text, queryVector);
      const tx = await enter(scope, prepared.settings === undefined ? undefined : { settings: prepared.settings });
      prompts.set(agent.id, await prepared.read(tx));
    }
    return prompts;
  }

  /** The seconds since `started` (a `performance.now()`). */
  const since = (started: number) => (performance.now() - started) / 1000;

  /** Handle the turn, then tell the observer how it ended: one record per agent asked, else one for the turn. */
  async function handleObserved(inbound: InboundMessage, turn: TurnOptions): Promise<TurnResult> {
    if (observer === undefined) return handleInOrder(inbound, turn, null);
    const started = performance.now();
    const tally: Tally = { outcome: 'notice', answers: [] };
    let thrown = false;
    try {
      return await handleInOrder(inbound, turn, tally);
    } catch (error) {
      thrown = true;
      const rejected = RosterError.isInstance(error) && (error.code === 'invalid_input' || error.code === 'memory_input_invalid');
      tally.outcome = rejected ? 'rejected' : 'failed';
      throw error;
    } finally {
      // An agent that answered in a turn that then failed (its reply not stored) counts as the turn's failure.
      const answered: TurnOutcome = thrown ? tally.outcome : 'answered';
      const records =
        tally.answers.length > 0
          ? tally.answers.map(({ engine, seconds, failure }) => (failure === null ? { engine, seconds, outcome: answered } : { engine, seconds, outcome: 'engine_failed' as const, failure }))
          : [{ engine: null, seconds: since(started), outcome: tally.outcome }];
      for (const record of records) {
        try {
          observer.turnEnded({ door: inbound.channel, ...record });
        } catch (error) {
          log?.warn({ err: error }, 'the turn observer failed');
        }
      }
    }
  }

  async function handleInOrder(inbound: InboundMessage, turn: TurnOptions, tally: Tally | null): Promise<TurnResult> {
    const started = performance.now();
    const files = validateFiles(inbound.files);
    let text: string;
    try {
      // A message may be only an image or a voice note: then it has no words.
      text = files.length > 0 && typeof inbound.text === 'string' && inbound.text.trim() === '' ? '' : validateText(inbound.text, 'message');
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
    // The message as stored: its files as a marker, never their bytes.
    const marker = fileMarker(files);
    const said = marker === '' ? text : text === '' ? marker : `${text}\n${marker}`;
    const stored = inbound.quoted === undefined ? said : `${said}\n\n[quoted]\n${inbound.quoted}`;

    /**
     * Store the message in the transaction that took the conversation's turn, addressed to the agents
     * chosen for it; a command or an /agent switch is stored for everyone and handled after.
     */
    const storeInbound = async (tx: Transaction, routed: Routed, conversation: ConversationRow): Promise<Inbound> => {
      // A gateway's turn stores only while its bot account's lease is the one it acts under.
      await checkFence(tx, turn.fence);
      const store = (address: { agentId: string | null; visibility: Visibility }) =>
        conversations.storeMessage(tx, {
          conversationId: conversation.id,
          externalId: inbound.externalMessageId ?? null,
          role: 'person',
          personId: routed.person?.id ?? null,
          text: stored,
          untrusted: inbound.quoted !== undefined,
          ...address,
        });
      const everyone = { agentId: null, visibility: 'conversation' as const };
      if (parseCommand(text) !== null || agentSwitchPattern.test(text)) return { conversation, message: await store(everyone), agents: null };
      const agents = chooseAgents(routed.active, routed.named, conversation, routed.binding, text, turn);
      if (agents.length === 0) {
        const message = await store(everyone);
        const names = routed.active.map((agent) => agent.name);
        const words = names.length === 0 ? 'There are no agents yet: the owner adds one with roster agent add.' : `Which agent? Say /agent NAME (one of ${names.join(', ')}), or @mention one.`;
        if (!message.duplicate) await conversations.storeMessage(tx, { conversationId: conversation.id, externalId: null, role: 'system', personId: routed.person?.id ?? null, agentId: null, text: words, visibility: 'conversation' });
        return { conversation, message, agents, notice: words };
      }
      // A one-to-one message to one agent is that pair's alone; in a group or in team mode it is said to everyone there.
      const team = turn.team === true || conversation.mode === 'team';
      const visibility: Visibility = conversation.kind === 'dm' && !team && agents.length === 1 && routed.person !== null ? 'pair' : 'conversation';
      return { conversation, message: await store({ agentId: visibility === 'pair' ? agents[0]!.id : null, visibility }), agents, visibility };
    };

    // A caller that gave up before the turn began (a gateway stopping with turns still queued) stores nothing: its message
    // stays unanswered where it was taken, for the retry or the next holder, and is not stored ahead of the answers to the
    // messages before it (an unanswered message counts as answered once a reply follows it).
    if (turn.signal?.aborted === true) throw new RosterError('turn_aborted', 'The turn was cancelled before it began.');
    // With an embedder on this machine, the message's vector is computed now, so that each agent's prompt is read in
    // the transaction that stores the message. A remote embedder is never asked before the route has let the sender in.
    const prefetch = memory.embedder.local && parseCommand(text) === null && !agentSwitchPattern.test(text);
    const queryVector = prefetch && text !== '' ? await memory.embedQuery(text).catch(() => null) : null;
    // 1. Route (sender, binding, conversation, the turn), store the message, address it and read each agent's prompt: one transaction.
    const routeAndStore = (withPrompts: boolean) =>
      database.adminScope('core: route, store and address an inbound message', async (tx, enter) => {
        const routed = await conversations.route(tx, {
          channel: inbound.channel,
          account,
          sender: inbound.sender,
          conversation: inbound.conversation,
          local,
          linkCode: linkCode !== undefined,
          agentName: turn.agent ?? null,
        });
        const held = routed.conversation !== null && routed.held ? await storeInbound(tx, routed, routed.conversation) : null;
        let prompts: Map<string, PromptParts> | null = null;
        if (withPrompts && held !== null && !held.message.duplicate && held.agents !== null && held.agents.length > 0) {
          try {
            prompts = await readPrompts(enter, routed.person, held, text, queryVector);
          } catch (error) {
            throw new PromptReadFailed('reading the prompts failed', { cause: error });
          }
        }
        return { routed, held, prompts };
      });
    let first: Awaited<ReturnType<typeof routeAndStore>>;
    try {
      first = await routeAndStore(prefetch);
    } catch (error) {
      if (!(error instanceof PromptReadFailed)) throw error;
      // Nothing of that transaction was kept: the message is stored again on its own, and each agent reads its prompt after.
      log?.warn({ err: error.cause }, 'reading the prompts with the message failed; reading them apart');
      first = await routeAndStore(false);
    }
    const { routed } = first;

    // 2. A stranger who is not let in links a code, or gets at most the pairing hint; nothing they said is kept.
    if (routed.conversation === null) {
      if (tally !== null) tally.outcome = 'refused';
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
      return { ...unkept, notice: pairingHint(turn.commandPrefix) };
    }

    // Another process holds the conversation's turn: wait for it, and store the message when it is this one's.
    const inbound2 = first.held ?? (await conversations.waitTurn(routed.conversation.id, turn.signal, (tx, conversation) => storeInbound(tx, routed, conversation)));
    // The conversation's turn is this process's until the replies are stored; a single reply ends it itself.
    const lease = { ended: false, touched: false, kept: conversations.keepTurn(inbound2.conversation.id) };
    try {
      return await handleTurn(inbound, turn, text, files, routed, inbound2, first.prompts, tally, started, lease);
    } finally {
      await lease.kept.stop();
      if (!lease.ended) await conversations.releaseTurn(inbound2.conversation.id, lease.touched);
    }
  }

  async function handleTurn(
    inbound: InboundMessage,
    turn: TurnOptions,
    text: string,
    files: readonly EngineFile[],
    routed: Routed,
    stored: Inbound,
    prompts: Map<string, PromptParts> | null,
    tally: Tally | null,
    started: number,
    lease: { ended: boolean; touched: boolean; kept: { stop(): Promise<void> } },
  ): Promise<TurnResult> {
    const { binding, person } = routed;
    const { conversation, message } = stored;
    const base = { messageId: message.id, conversationId: conversation.id, person };
    if (message.duplicate) {
      if (tally !== null) tally.outcome = 'duplicate';
      return { ...base, duplicate: true, replies: [], notice: null, signals: [] };
    }
    if (stored.notice !== undefined) return { ...base, duplicate: false, replies: [], notice: stored.notice, signals: [] };

    const notice = async (words: string): Promise<TurnResult> => {
      await conversations.storeNotice(conversation.id, person?.id ?? null, words, turn.fence);
      return { ...base, duplicate: false, replies: [], notice: words, signals: [] };
    };

    // The commands (/agents, /team, /memory, /forget …, /help): answered by Roster, never said to an agent.
    const command = parseCommand(text);
    if (command !== null) {
      const answer = await runCommand(
        { directory, memory, conversations },
        { ...command, channel: inbound.channel, messageId: message.id, person, binding, conversation, turn },
      );
      if (answer.agentId !== null && conversation.kind === 'dm' && person !== null) await conversations.addressMessage(message.id, { agentId: answer.agentId, visibility: 'pair' });
      if (answer.keep) return notice(answer.text);
      // An answer that repeats memory is shown, never copied into the transcript.
      return { ...base, duplicate: false, replies: [], notice: answer.text, signals: [] };
    }

    // 2. The agent(s): chosen with the route, or named by an /agent switch.
    let body = text;
    let agents: Agent[];
    let visibility: Visibility;
    const switchTo = stored.agents === null ? agentSwitchPattern.exec(text) : null;
    if (switchTo !== null) {
      const agent = await directory.agentByName(switchTo[1]!);
      await conversations.switchAgent(conversation.id, agent.id);
      if (switchTo[2] === undefined || switchTo[2].trim() === '') return notice(`Now talking to ${agent.name}.`);
      body = switchTo[2].trim();
      agents = [agent];
      visibility = conversation.kind === 'dm' && person !== null ? 'pair' : 'conversation';
      await conversations.addressMessage(message.id, { agentId: visibility === 'pair' ? agent.id : null, visibility });
    } else {
      agents = stored.agents!;
      visibility = stored.visibility!;
    }

    // 3. Learning signals, once, from the person's own words; written with each addressed agent's reply.
    const signals = person === null ? [] : detectSignals(body, inbound.rating);

    // 4. Each agent, concurrently, in its own scope.
    const untrusted = inbound.quoted !== undefined;
    const explicitRemember = signals.some((signal) => signal.kind === 'remember');
    const forgotten: string[] = [];
    const answers = await Promise.all(
      agents.map(async (agent) => {
        const scope = scopeOf(agent, person, conversation);
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
          forgotten,
          uses: [],
        };
        let answer: AgentAnswer;
        try {
          // The prompt read with the message, when it was: only for the agents chosen with the route, whose words are the message's.
          const prompt = switchTo === null ? prompts?.get(agent.id) : undefined;
          answer = await runAgent(agent, context, body, conversation.kind, turn, true, { files, ...(prompt === undefined ? {} : { prompt }) });
          tally?.answers.push({ engine: agent.engine, seconds: since(started), failure: null });
        } catch (error) {
          log?.error({ err: error, agent: agent.name }, 'engine failed');
          tally?.answers.push({ engine: agent.engine, seconds: since(started), failure: RosterError.isInstance(error) ? error.code : 'unknown' });
          const reason = RosterError.isInstance(error) ? error.message : 'its engine failed';
          answer = { text: `${agent.name} could not answer: ${reason}`, toolCalls: [], memories: [] };
        }
        return { agent, scope, answer, uses: context.uses! };
      }),
    );
    // A turn whose caller gave up (a gateway stopping, a chat that hung up) keeps no reply, not even a failure's:
    // its message stays unanswered, for the retry or the bot account's next holder to answer.
    if (turn.signal?.aborted === true) throw new RosterError('turn_aborted', 'The turn was cut short before its replies were stored.');
    // Replies are stored once every agent has answered, so that one that repeats words another agent forgot
    // in this same turn is not kept after the forget erased the transcript; nor are the signals, which hold the person's words.
    const phrases = forgotten.map(normalizeText).filter((phrase) => phrase !== '');
    const repeatsForgotten = (words: string) => phrases.length > 0 && phrases.some((phrase) => ` ${normalizeText(words)} `.includes(` ${phrase} `));
    const kept = repeatsForgotten(body) ? [] : signals;
    // One reply ends the turn as it is stored; a team's replies leave that to the release after them. The turn is not renewed from here on.
    const single = answers.length === 1;
    await lease.kept.stop();
    const replies = await Promise.all(
      answers.map(async ({ agent, scope, answer: given, uses }) => {
        const answer = repeatsForgotten(given.text) ? { ...given, text: `${agent.name}'s reply repeated words that were just forgotten; it is not kept.` } : given;
        // 5. The reply, its follow-up jobs and the signals, in the agent's scope, in one transaction: a reply is never kept without them.
        const jobs: FollowUpJob[] =
          scope === null
            ? []
            : [
                {
                  queue: 'extract',
                  name: 'extract-conversation',
                  payload: { conversationId: conversation.id, agentId: agent.id, personId: person!.id },
                  dedupeKey: `extract:${conversation.id}:${agent.id}:${message.id}`,
                  agentId: agent.id,
                  personId: person!.id,
                },
                ...(kept.length === 0
                  ? []
                  : [{ queue: 'harvest' as const, name: 'harvest-agent', payload: { agentId: agent.id }, dedupeKey: `harvest:${agent.id}:${message.id}`, agentId: agent.id, personId: person!.id }]),
              ];
        const replyId = await conversations.storeReply(
          scope,
          { conversationId: conversation.id, agentId: agent.id, text: answer.text, visibility },
          {
            jobs,
            touch: single,
            ...(turn.fence === undefined ? {} : { fence: turn.fence }),
            ...(scope === null ? {} : { along: [learning.recordAlong(scope, { messageId: message.id, signals: kept, text: body, channel: inbound.channel })].filter((write) => write !== null) }),
          },
          // Each fact the agent recalled in this turn is used once, whichever of its recalls found it.
          scope === null || uses.length === 0
            ? undefined
            : {
                along: (tx) => memory.usesAlong(tx, uses, 'recall', { kind: 'agent', id: agent.name }),
                otherwise: (tx) => memory.countUses(tx, uses.map((fact) => fact.id), 'recall', { kind: 'agent', id: agent.name }),
              },
        );
        if (single) lease.ended = true;
        return { agent: agent.name, agentId: agent.id, text: answer.text, toolCalls: answer.toolCalls, memories: answer.memories, messageId: replyId };
      }),
    );
    lease.touched = true;
    return { ...base, duplicate: false, replies, notice: null, signals };
  }

  return handleObserved;
}
