import type { InstallationKey } from '@roster/config';
import type { Database, Scope, ScopedTransaction, WriteAlong } from '@roster/db';
import type { AuditLog } from './audit.js';
import type { Embedder } from '@roster/contracts';
import type { EmbedFactsOptions, EmbedFactsReport } from './embed-facts.js';
import type { ExportFormat } from './export.js';
import type { FactMatch, MatchOptions } from './match.js';
import type { SearchOptions, SearchRead } from './search.js';
import type { Actor, Fact, Provenance, SearchResult, Tombstone } from './types.js';
import type { HistoryEntry } from './versions.js';

/** What a memory offers (`createMemory` in memory.ts builds one). */
export interface RememberInput {
  content: string;
  category?: string;
  /** Defaults to `private` when the scope has a person, else `agent`. */
  audience?: 'private' | 'agent';
  provenance: Provenance;
}

export interface MemoryOptions {
  database: Database;
  embedder: Embedder;
  /**
   * The installation key: tombstones and the audit chain are keyed with it.
   * Every process of an installation must hold the same one (`prepare`
   * refuses another).
   */
  key: InstallationKey;
}

/** A use moves `uses` and `last_used_at`; being placed in a prompt is not one. */
export type UseReason = 'recall' | 'confirmation' | 'citation';

/**
 * The memory of every agent, per person. Each operation is one scoped
 * transaction and leaves one audit event; none takes an agent or a person
 * from its arguments: the scope says whose memory it is.
 */
export interface Memory {
  readonly embedder: Embedder;
  /** The audit log, keyed like this memory: appends for other packages' changes, heads and verification. */
  readonly audit: AuditLog;
  /**
   * Check that the database was keyed with this memory's key (or key it now),
   * seal the audit chains from before keying, and register the embedder's
   * model and index; call once before use.
   */
  prepare(): Promise<void>;
  /**
   * Remember a statement. The same words believed now are returned instead
   * (`created: false`); words that held only until a change are recorded again
   * when a person says them, and returned as that past version to a job or the model.
   */
  remember(scope: Scope, input: RememberInput): Promise<{ fact: Fact; created: boolean }>;
  /**
   * "That was wrong": the current version is retracted (from now on it held at
   * no valid time; what was believed before now still shows it) and the new
   * content takes its valid time. Any other version is refused (`fact_not_current`).
   */
  correct(scope: Scope, factId: string, content: string, provenance: Provenance): Promise<{ retracted: Fact; fact: Fact }>;
  /**
   * "That changed": from now on the current version is believed valid only
   * until now (`previous`, its restatement; what was believed before now is
   * kept as it was) and the new content holds from now. Any other version is
   * refused (`fact_not_current`).
   */
  update(scope: Scope, factId: string, content: string, provenance: Provenance): Promise<{ previous: Fact; fact: Fact }>;
  confirm(scope: Scope, factId: string, provenance: Provenance): Promise<Fact>;
  dispute(scope: Scope, factId: string, provenance: Provenance): Promise<Fact>;
  reject(scope: Scope, factId: string, provenance: Provenance): Promise<Fact>;
  restore(scope: Scope, factId: string, provenance: Provenance): Promise<Fact>;
  /**
   * Forget a fact and its whole chain of versions, and erase its words from
   * every copy the database holds (roster_forget_everywhere: messages, the
   * request itself, learning events, mirror cases and runs, episodes,
   * approvals, lessons, outbox). `erased` counts the rows per place.
   */
  forget(scope: Scope, factId: string, provenance: Provenance): Promise<{ fact: Fact; tombstoneId: string; messagesErased: number; erased: Record<string, number> }>;
  /**
   * The tombstones of this scope's own memory (the person's, or the
   * agent-wide one's), newest first, not lifted, recorded at or before
   * `recordedAt` when given: when each fact was forgotten and who asked, so
   * a forgotten fact stays visible as forgotten rather than vanishing.
   */
  tombstones(scope: Scope, options?: { recordedAt?: Date }): Promise<Tombstone[]>;
  /** Whether an automatic path would be refused this text (it matches a tombstone). */
  isTombstoned(scope: Scope, content: string): Promise<boolean>;
  get(scope: Scope, factId: string): Promise<Fact>;
  /**
   * The scope a fact of this agent lives in: its person's private scope, or
   * the agent-wide one. For the owner's tools, which act on a fact by id;
   * an id of another agent, or none, is `fact_not_found`.
   */
  scopeOf(agentId: string, factId: string): Promise<Scope>;
  /** What is believed now and valid now, newest first. */
  list(scope: Scope, options?: { category?: string; limit?: number }): Promise<Fact[]>;
  /** The versions of a fact, oldest first, each as believed now. */
  history(scope: Scope, factId: string): Promise<HistoryEntry[]>;
  /** What was believed at `recordedAt` (default now) to hold at `validAt` (default now), to the millisecond. */
  asOf(scope: Scope, at: { validAt?: Date; recordedAt?: Date }): Promise<Fact[]>;
  search(scope: Scope, query: string, options?: SearchOptions): Promise<SearchResult[]>;
  /**
   * The same search, made ready to be read inside the caller's own scoped
   * statement (`SearchRead`): the core reads a turn's lessons, history and
   * facts in one round trip. Open the transaction with its `settings`.
   */
  prepareSearch(scope: Scope, query: string, options?: SearchOptions): Promise<SearchRead>;
  /**
   * A query's vector as search computes it (null when the embedder fails),
   * for `SearchOptions.queryVector`: so that a caller can compute it before
   * it opens the transaction the search runs in. Makes memory ready first.
   */
  embedQuery(query: string): Promise<number[] | null>;
  /**
   * Only the facts that genuinely match a request (shared words or a close
   * vector, at measured thresholds), best first, each with why; none when
   * nothing does. Forget, correct and update act on nothing else.
   */
  match(scope: Scope, request: string, options?: MatchOptions): Promise<FactMatch[]>;
  recordUse(scope: Scope, factIds: readonly string[], reason: UseReason, actor: Actor): Promise<number>;
  /**
   * The uses of `facts` (each with whose it is), as a write the next
   * statement of the caller's transaction carries (the core: a turn's reply's
   * statement), for a transaction that opened with the agent's audit chain
   * locked (`ScopeOptions.chainHeads`): each fact's use counted, with its
   * `use` event linked to that head. All or nothing: it counts none (its row
   * reads none) when a fact is no longer one search reads or another
   * transaction holds it; then `countUses` counts what it can.
   */
  usesAlong(tx: ScopedTransaction, facts: ReadonlyArray<{ id: string; personId: string | null }>, reason: UseReason, actor: Actor): WriteAlong | null;
  /**
   * The uses of those of `factIds` that are still facts search reads and
   * that no other transaction holds, with their events, in a transaction
   * that opened with the agent's audit chain locked: two statements.
   */
  countUses(tx: ScopedTransaction, factIds: readonly string[], reason: UseReason, actor: Actor): Promise<number>;
  /** Compute the vectors facts lack (the embed job); a fact forgotten meanwhile gets none. */
  embedFacts(options?: EmbedFactsOptions): Promise<EmbedFactsReport>;
  export(scope: Scope, format: ExportFormat): Promise<string>;
  /**
   * Every version of every fact kept for the scope's own person (a private
   * scope): current, restated, retracted, rejected, faded and forgotten ones
   * (a forgotten one without its words), oldest first. That includes what
   * they told the agent for everyone (audience `agent`), never what someone
   * else did. For a person's own export.
   */
  personVersions(scope: Scope): Promise<Fact[]>;
}
