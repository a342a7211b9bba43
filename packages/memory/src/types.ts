/** Every trust state a fact can be in. Reads withhold the last five. */
export const trustStates = ['candidate', 'active', 'verified', 'disputed', 'retracted', 'rejected', 'faded', 'forgotten'] as const;
export type Trust = (typeof trustStates)[number];

/** The states a read may return. */
export const readableTrust: readonly Trust[] = ['candidate', 'active', 'verified'];

/** Who made a change to memory. */
export interface Actor {
  kind: 'person' | 'agent' | 'job' | 'owner';
  /** A person id, an agent name, a job name: kept for the audit log. */
  id?: string;
}

/** Where a statement came from. */
export interface Provenance {
  actor: Actor;
  /** The transcript messages the statement was drawn from. */
  sourceMessageIds?: readonly string[];
  channel?: string;
  tool?: string;
  /**
   * The turn had read untrusted content (a web page, a file, tool output):
   * what the model writes then starts as `candidate`.
   */
  untrusted?: boolean;
  /**
   * The person asked, in their own words, for this to be remembered. Only an
   * explicit statement, by the same person, in a new message, lifts a tombstone.
   */
  explicit?: boolean;
}

/** One fact as reads return it. `content` is null once forgotten. */
export interface Fact {
  id: string;
  agentId: string;
  personId: string | null;
  audience: 'private' | 'agent';
  content: string | null;
  category: string;
  trust: Trust;
  /** Valid time: when the content holds, from `validFrom` until `validTo` (null: still). */
  validFrom: Date;
  validTo: Date | null;
  /** Record time: this belief was held from `recordedAt` until `supersededAt` (null: still held). */
  recordedAt: Date;
  supersededAt: Date | null;
  /** The next version of the fact: the row an update or a correction wrote. */
  supersededBy: string | null;
  sourceMessageIds: string[];
  actorKind: Actor['kind'];
  actorId: string | null;
  channel: string | null;
  tool: string | null;
  untrustedInput: boolean;
  uses: number;
  lastUsedAt: Date | null;
  /** This row restates that one: the same version, its validity closed by a later change. */
  restates: string | null;
  /** This row's belief was restated (its validity closed) by that row. */
  restatedAs: string | null;
}

/** Why a search result was chosen, so a page can say it. */
export interface SearchScores {
  /** Rank and score in the full-text arm, when it matched. */
  fullText: { rank: number; score: number } | null;
  /** Rank and cosine distance in the vector arm, when it matched. */
  vector: { rank: number; distance: number } | null;
  /** Reciprocal-rank fusion of the two arms. */
  fused: number;
  trustWeight: number;
  recencyWeight: number;
  /** fused × trustWeight × recencyWeight. */
  relevance: number;
  /** The maximal-marginal-relevance score the result was picked with. */
  diversity: number;
  /** The share of the query's weight (its words, each by its idf in the scope) that the fact holds, 0 to 1. */
  coverage: number;
  /** Cosine similarity of the query's and the fact's vectors, when the vector arm found it. */
  similarity: number | null;
}

export interface SearchResult {
  fact: Fact;
  scores: SearchScores;
  /** An estimate of the tokens the fact takes in a prompt. */
  tokens: number;
  /**
   * Whether it clears the relevance floor (search.ts, `relevanceFloor`).
   * Search returns only relevant results unless asked for all.
   */
  relevant: boolean;
}

/**
 * What a forgotten fact leaves where people look: that something was
 * forgotten, when, and who asked. Never a word of it (the keyed hashes that
 * stop it coming back are not shown either).
 */
export interface Tombstone {
  id: string;
  /** The forgotten version the forget was asked of (its row stays, without content). */
  factId: string | null;
  /** The person whose fact it was; null: an agent-wide fact. */
  personId: string | null;
  forgottenAt: Date;
  /** Who asked to forget it, from the forget's audit event; null when the event is not found. */
  forgottenBy: Actor | null;
}
