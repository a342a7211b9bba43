import type { Logger } from '@roster/config';
import type { Database, Scope } from '@roster/db';
import { maxTextLength, type Actor, type Fact, type Memory, type Provenance, type SearchResult } from '@roster/memory';
import type { Agent, Channel, Directory, Person } from './directory.js';
import type { Engine, EnginePart, EngineToolCall, InboundMessage } from '@roster/contracts';
import type { LearningSignal } from './signals.js';
import type { PersonErasure } from './person-erase.js';
import type { PersonExport } from './person-export.js';
import type { ChannelInbox } from './inbox.js';

export type { InboundFile, InboundMessage } from '@roster/contracts';
export { maxFileBytes, maxFiles } from '@roster/contracts';

export interface TurnOptions {
  /** Talk to this agent (the CLI's --agent). */
  agent?: string;
  /** All active agents answer. */
  team?: boolean;
  /** Streamed parts of each agent's reply. */
  onPart?: (agent: string, part: EnginePart) => void;
  signal?: AbortSignal;
  /**
   * How this door writes a command, for the answers that name one (default
   * `/`; Slack keeps `/` for its own slash commands, so there it is `/roster `).
   */
  commandPrefix?: string;
  /**
   * The bot account's lease this door acts under (a gateway's): everything
   * the turn stores (the message, a notice, the replies) is stored only while
   * that lease still carries this holder and token, checked in the storing
   * transaction. A gateway whose lease was taken over stores nothing: the
   * turn fails with `lease_lost`.
   */
  fence?: MessageFence;
}

/** A bot account's lease as its holder knows it: see `TurnOptions.fence`. */
export interface MessageFence {
  channel: string;
  account: string;
  holder: string;
  token: number;
}

export interface Reply {
  agent: string;
  agentId: string;
  text: string;
  toolCalls: EngineToolCall[];
  /**
   * The facts placed in the prompt's memory block for this reply, with the
   * scores that chose them, so a page can show what the agent read and why.
   * Only facts of the turn's own scope; none when it has no person.
   */
  memories: SearchResult[];
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
  /** Told how each turn ended, for metrics; the core never imports a metrics library. */
  observer?: TurnObserver;
}

/**
 * How a turn ended: `answered` (an agent replied), `engine_failed` (its engine
 * failed; the person was told), `notice` (Roster answered itself: a command,
 * an /agent switch, "which agent?"), `refused` (a sender the access policy
 * kept out, or a link code: nothing kept), `duplicate` (a message handled
 * before), `rejected` (bad input: too long, empty), `failed` (anything else).
 */
export type TurnOutcome = 'answered' | 'engine_failed' | 'notice' | 'refused' | 'duplicate' | 'rejected' | 'failed';

/** One turn as an observer sees it: the door, the engine and the time, never who spoke or what was said. */
export interface TurnRecord {
  /** The channel the message came through: web, cli, telegram… */
  door: string;
  /** The agent's engine reference (`offline`, `openai:gpt-4o-mini`); null when no agent was asked. */
  engine: string | null;
  outcome: TurnOutcome;
  /** From the start of the turn (after earlier messages of its conversation) to this agent's answer, or to its end. */
  seconds: number;
  /** The engine's error code (`engine_timeout`…), when the outcome is `engine_failed`. */
  failure?: string;
}

/** Told of every turn the core handles: one record per agent that answered, or one for a turn no agent answered. */
export interface TurnObserver {
  /** Called once per record; it must not throw (a throw is logged and ignored) and must not block. */
  turnEnded(record: TurnRecord): void;
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
  /** The messages gateways took and have not answered yet: kept so that a stop or a crash loses none. */
  readonly inbox: ChannelInbox;
  handle(inbound: InboundMessage, options?: TurnOptions): Promise<TurnResult>;
  /**
   * “That was wrong”, said at a door that is not a conversation (the page's
   * Correct…, `roster memory correct`): the fact is retracted and the right
   * content takes its place, and the correction is recorded as a learning
   * event under the fact's (agent, person), as a chat correction is, so the
   * nightly harvest makes it a mirror case. One road: a correction counts
   * the same whichever door it came through.
   */
  correctFact(scope: Scope, factId: string, content: string, provenance: Provenance & { channel: Channel }): Promise<{ retracted: Fact; fact: Fact }>;
  /**
   * Forget every fact of an archived agent, in every scope (tombstones and
   * events as for any forget), then erase the words of everything else it
   * holds (messages, learning events, mirror cases and runs, episodes,
   * lessons, approvals, pending jobs), after the owner typed its name to
   * confirm. Its row stays, marked purged, for the audit; its name is free.
   */
  purgeAgent(name: string, confirmation: string): Promise<{ facts: number; erased: Record<string, number> }>;
  /** Everything Roster holds about one person, read in their own scopes: their facts with every version, messages, identities, learning, lessons citing them, sessions and tokens. */
  exportPerson(person: Person): Promise<PersonExport>;
  /**
   * Erase everything Roster holds about one person, with every agent and on
   * every channel, after their name was typed again as `confirmation`: each
   * fact forgotten (keyed tombstones), their messages and the replies to
   * them, learning events, the lessons and approvals drawn from their words,
   * their handles (which are strangers again), link codes, sessions and
   * tokens; the erase job queued. Their row stays, without a name, for the
   * audit; every agent's chain records the erasure. The last owner is refused.
   */
  erasePerson(person: Person, confirmation: string, actor: Actor): Promise<PersonErasure>;
  /**
   * A person's own conversation on a channel, as they see it (oldest first,
   * the newest `limit`): what they said, what agents and Roster answered. A
   * line whose words were forgotten shows as forgotten, without them. Null
   * when the person has no such conversation.
   */
  transcript(input: { channel: Channel; externalId: string; personId: string; limit?: number }): Promise<{ conversationId: string; lines: TranscriptLine[] } | null>;
  /**
   * The messages a fact was drawn from, as one person may see them: where
   * and when each was said and by whom, and its words only when the line is
   * that person's own (what they said, or an agent's answer to them) and not
   * forgotten. The caller passes only ids of facts the person may read; an
   * id that names no message is left out.
   */
  sourceMessages(input: { ids: readonly string[]; personId: string }): Promise<SourceMessage[]>;
}

/** A message a fact came from, as `Core.sourceMessages` shows it to one person. */
export interface SourceMessage {
  id: string;
  /** The door it came through: web, telegram, … */
  channel: Channel;
  role: 'person' | 'agent' | 'system' | 'tool';
  /** Who said it (a person's line), or to whom it was answered (an agent's). */
  person: { id: string; name: string } | null;
  /** The agent that answered, for an agent's line. */
  agent: string | null;
  at: Date;
  /** Its words were erased by a forget. */
  forgotten: boolean;
  /** The line is the reader's own: its words are theirs to read. */
  own: boolean;
  /** The words, when `own` and not `forgotten`; else null. */
  text: string | null;
}

/** One line of a transcript. */
export interface TranscriptLine {
  id: string;
  role: 'person' | 'agent' | 'system';
  /** The agent that answered, for an agent's line. */
  agent: string | null;
  /** The words; empty when forgotten. */
  text: string;
  forgotten: boolean;
  at: Date;
}
