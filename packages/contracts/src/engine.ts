import type { z } from 'zod';

/**
 * A tool the engine may call. The core defines the memory tools; handlers
 * take their scope from the turn's context, never from `input`.
 */
export interface EngineTool<Input = unknown, Output = unknown> {
  name: string;
  /** Told to the model: when to call it and what it returns. */
  description: string;
  /** Validates the model's arguments; a model that sends bad ones is told the error, not obeyed. */
  inputSchema: z.ZodType<Input>;
  execute(input: Input, options: { signal?: AbortSignal }): Promise<Output>;
}

/** What a file is to a model: a picture, a sound (a voice note, an audio clip), or any other document. */
export type FileKind = 'image' | 'audio' | 'file';

/**
 * A file of the message being answered: its bytes go to the model with this
 * turn only, never into history, memory or the database.
 */
export interface EngineFile {
  kind: FileKind;
  /** The IANA media type (`image/jpeg`, `audio/ogg`). */
  mediaType: string;
  data: Uint8Array;
  /** The name the sender gave it, when there is one. */
  name?: string;
}

/** One message of the history the engine sees; stored messages only, redacted and never forgotten. */
export interface EngineMessage {
  role: 'user' | 'assistant';
  content: string;
}

/** A piece of a streamed reply. */
export type EnginePart =
  | { type: 'text-delta'; text: string }
  | { type: 'tool-call'; toolName: string; input: unknown }
  | { type: 'tool-result'; toolName: string; output: unknown }
  | { type: 'turn-end'; text: string };

export interface EngineRequest {
  /**
   * The stable prefix: persona, job, tool guidance, active lessons. It is
   * byte-identical from turn to turn unless those change, so a provider's
   * prompt cache holds.
   */
  system: string;
  /** The memory block of this turn: retrieved facts and the latest episode. */
  memory: string;
  /** Recent history, oldest first. */
  history: readonly EngineMessage[];
  /** What the person just said. */
  message: string;
  /**
   * Files that came with this message, for an engine whose `accepts` covers
   * their kinds; they go with the current message only.
   */
  files?: readonly EngineFile[];
  tools: readonly EngineTool[];
  /** The most tool-call rounds before the engine must answer (default 5). */
  maxSteps?: number;
  signal?: AbortSignal;
  /** Receives `text-delta` parts as the reply streams, tool events, and a last `turn-end`. */
  onPart?: (part: EnginePart) => void;
}

export interface EngineToolCall {
  toolName: string;
  input: unknown;
  output: unknown;
}

export interface EngineResult {
  /** The whole reply across tool steps: the `text-delta` parts joined. */
  text: string;
  toolCalls: EngineToolCall[];
  /** Tokens as the provider counted them, when it did; cached input tokens show the prefix cache at work. */
  usage?: { inputTokens?: number; outputTokens?: number; cachedInputTokens?: number };
}

/**
 * A language model (or the offline rule engine) that answers a turn, calling
 * tools as it goes. Implementations own their clients and keys.
 */
export interface Engine {
  /** The reference it was made from: `offline`, `openai:gpt-4o-mini`, … */
  readonly id: string;
  /** Runs on this machine: memory-bearing calls may go to it under PRIVACY=strict. */
  readonly local: boolean;
  /**
   * The kinds of file its model reads, sent with the message (empty: text
   * only). The core never hands an engine a file of a kind not listed here:
   * the person is told plainly that this agent cannot read it.
   */
  readonly accepts: readonly FileKind[];
  /**
   * Whether its memory block also carries the best results below the
   * relevance floor. A language model sets aside what does not bear on the
   * message, and the floor keeps too little for it: on LoCoMo, R@10 over
   * the results above it is 0.467 against 0.651 for the ranked results
   * (docs/benchmarks.md, never-said). An engine that says what it finds (the
   * offline one) reads above the floor only. "Memories used" lists what the
   * engine was given, either way.
   */
  readonly readsBelowFloor?: boolean;
  /**
   * Answer one turn. Rejects with a `RosterError` carrying `retryable`:
   * `engine_failed`, `engine_timeout` or `engine_aborted`, so that a worker
   * knows whether to try again.
   */
  run(request: EngineRequest): Promise<EngineResult>;
}
