import type { Logger } from '@roster/config';
import { isUuid, type Database, type Scope } from '@roster/db';
import { RosterError } from '@roster/errors';
import { normalizeText, validateText, type Memory } from '@roster/memory';
import type { AgentAnswer, RunAgent } from './agent-runner.js';
import { pairingHint, parseCommand, runCommand } from './commands.js';
import type { TurnContext } from './context.js';
import { checkFence, type Binding, type ConversationRow, type ConversationStore, type Visibility } from './conversation-store.js';
import type { Agent, Directory, Person } from './directory.js';
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
  runAgent: RunAgent;
  log?: Logger;
  observer?: TurnObserver;
}

/** How one turn went, filled in as it runs, for the observer: how it ended, and each agent's engine, time and failure. */
interface Tally {
  outcome: TurnOutcome;
  answers: Array<{ engine: string; seconds: number; failure: string | null }>;
}

/**
 * The turn pipeline, in order: route (sender, binding, conversation, turn
 * lease), store the message once, pick the agents, record learning signals,
 * run each agent in its own scope, store replies, queue follow-up jobs.
 */
export function createTurnPipeline(options: TurnPipelineOptions): (inbound: InboundMessage, turn: TurnOptions) => Promise<TurnResult> {
  const { database, memory, directory, conversations, learning, runAgent, log, observer } = options;

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

    // 1. Resolve the sender and the binding; for a sender let in, open the conversation and take its turn, in one transaction.
    const routed = await database.adminScope('core: route an inbound message', async (tx) => {
      const binding = await conversations.bindingFor(tx, inbound.channel, account);
      const person = await conversations.resolveSender(tx, inbound.channel, inbound.sender);
      const allowed = binding.policy === 'open' || (binding.policy === 'allowlist' && binding.allowlist.includes(inbound.sender.externalId ?? ''));
      // A link code is redeemed, never kept, whoever sends it.
      if (linkCode !== undefined || (person === null && (local || !allowed))) return { binding, person, conversation: null, held: false };
      const conversation = await conversations.openConversation(tx, { channel: inbound.channel, externalId: inbound.conversation.externalId, kind: inbound.conversation.kind, binding, person });
      return { binding, person, conversation, held: await conversations.takeTurn(tx, conversation.id) };
    });

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

    // The conversation's turn is this process's until the replies are stored.
    const release = await conversations.holdTurn(routed.conversation.id, routed.held, turn.signal);
    try {
      return await handleTurn(inbound, turn, text, files, routed.binding, routed.person, routed.conversation, tally, started);
    } finally {
      await release();
    }
  }

  async function handleTurn(
    inbound: InboundMessage,
    turn: TurnOptions,
    text: string,
    files: readonly EngineFile[],
    binding: Binding,
    person: Person | null,
    conversation: ConversationRow,
    tally: Tally | null,
    started: number,
  ): Promise<TurnResult> {
    // 3. Store the message once: its files as a marker, never their bytes.
    const marker = fileMarker(files);
    const said = marker === '' ? text : text === '' ? marker : `${text}\n${marker}`;
    const message = await database.adminScope('core: store an inbound message', async (tx) => {
      await checkFence(tx, turn.fence);
      return conversations.storeMessage(tx, {
        conversationId: conversation.id,
        externalId: inbound.externalMessageId ?? null,
        role: 'person',
        personId: person?.id ?? null,
        agentId: null,
        text: inbound.quoted === undefined ? said : `${said}\n\n[quoted]\n${inbound.quoted}`,
        visibility: 'conversation',
        untrusted: inbound.quoted !== undefined,
      });
    });
    const base = { messageId: message.id, conversationId: conversation.id, person };
    if (message.duplicate) {
      if (tally !== null) tally.outcome = 'duplicate';
      return { ...base, duplicate: true, replies: [], notice: null, signals: [] };
    }

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

    // 4. Pick the agent(s).
    let body = text;
    let agents: Agent[];
    let team = turn.team === true || conversation.mode === 'team';
    const switchTo = agentSwitchPattern.exec(text);
    if (switchTo !== null) {
      const agent = await directory.agentByName(switchTo[1]!);
      await conversations.switchAgent(conversation.id, agent.id);
      if (switchTo[2] === undefined || switchTo[2].trim() === '') return notice(`Now talking to ${agent.name}.`);
      body = switchTo[2].trim();
      agents = [agent];
      team = false;
    } else {
      agents = await chooseAgents(directory, conversation, binding, body, turn);
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
    const forgotten: string[] = [];
    const answers = await Promise.all(
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
          forgotten,
        };
        let answer: AgentAnswer;
        try {
          answer = await runAgent(agent, context, body, conversation.kind, turn, true, files);
          tally?.answers.push({ engine: agent.engine, seconds: since(started), failure: null });
        } catch (error) {
          log?.error({ err: error, agent: agent.name }, 'engine failed');
          tally?.answers.push({ engine: agent.engine, seconds: since(started), failure: RosterError.isInstance(error) ? error.code : 'unknown' });
          const reason = RosterError.isInstance(error) ? error.message : 'its engine failed';
          answer = { text: `${agent.name} could not answer: ${reason}`, toolCalls: [], memories: [] };
        }
        return { agent, scope, answer };
      }),
    );
    // Replies are stored once every agent has answered, so that one that repeats words another agent forgot
    // in this same turn is not kept after the forget erased the transcript.
    const phrases = forgotten.map(normalizeText).filter((phrase) => phrase !== '');
    const replies = await Promise.all(
      answers.map(async ({ agent, scope, answer: given }) => {
        const held = phrases.length > 0 && phrases.some((phrase) => ` ${normalizeText(given.text)} `.includes(` ${phrase} `));
        const answer = held ? { ...given, text: `${agent.name}'s reply repeated words that were just forgotten; it is not kept.` } : given;
        // 7. Follow-up jobs, in the agent's scope, written in the reply's own transaction: a reply is never kept without them.
        const replyId = await conversations.storeReply(scope, { conversationId: conversation.id, agentId: agent.id, text: answer.text, visibility }, async (tx) => {
          await checkFence(tx, turn.fence);
          if (scope === null) return;
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
        return { agent: agent.name, agentId: agent.id, text: answer.text, toolCalls: answer.toolCalls, memories: answer.memories, messageId: replyId };
      }),
    );
    return { ...base, duplicate: false, replies, notice: null, signals };
  }

  return handleObserved;
}
