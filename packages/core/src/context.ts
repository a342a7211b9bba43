import { AsyncLocalStorage } from 'node:async_hooks';
import type { Scope } from '@roster/db';
import { RosterError } from '@roster/errors';
import type { Agent, Channel, Person } from './directory.js';

/**
 * What one agent's part of a turn runs with. Parallel agents each run in
 * their own AsyncLocalStorage context, so they cannot overwrite each other's
 * identity; tool handlers read it from here, never from a model's arguments.
 */
export interface TurnContext {
  agent: Agent;
  /** null for a stranger: no memory is read or written. */
  scope: Scope | null;
  person: Person | null;
  conversationId: string;
  /** The stored inbound message this turn answers. */
  messageId: string;
  channel: Channel | 'internal';
  /** The turn read untrusted content: what the model writes starts as candidate. */
  untrusted: boolean;
  /** The person explicitly asked to remember, in this message. */
  explicitRemember: boolean;
  /** 0 for a person's turn, 1 inside a colleague call (which cannot call further). */
  depth: number;
  /**
   * The words forgotten during this turn, shared by every agent answering it
   * (held in this process only, never stored): a reply that repeats them is
   * not kept, since it may be stored after the forget erased the transcript.
   */
  forgotten: string[];
  /**
   * The facts each recall of this agent's own turn returned (depth 0), with
   * whose each is: each is a use, recorded with the agent's reply in its
   * transaction. Absent: each recall records its uses at once.
   */
  uses?: Array<{ id: string; personId: string | null }>;
  /** The engine answering reads search results below the relevance floor too (`Engine.readsBelowFloor`). */
  readsBelowFloor?: boolean;
}

const storage = new AsyncLocalStorage<TurnContext>();

export function runInTurn<T>(context: TurnContext, fn: () => Promise<T>): Promise<T> {
  return storage.run(context, fn);
}

/** The context of the running turn; a tool called outside one is a programming error. */
export function currentTurn(): TurnContext {
  const context = storage.getStore();
  if (context === undefined) throw new RosterError('turn_missing', 'A memory tool ran outside a turn; tools only run inside the core.');
  return context;
}
