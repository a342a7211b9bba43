import type { InstallationKey } from '@roster/config';
import { enqueue, isUuid, type Database, type Scope, type ScopedTransaction } from '@roster/db';
import { RosterError } from '@roster/errors';
import { createAuditLog, type AuditLog } from './audit.js';
import type { Embedder } from './embedders/index.js';
import { embedFacts, type EmbedFactsOptions, type EmbedFactsReport } from './embed-facts.js';
import { embedOne, ensureEmbeddingModel } from './embeddings.js';
import { toSql } from 'pgvector';
import { FactNotFoundError, FactStateError, RejectedStatementError, TombstonedError } from './errors.js';
import { renderExport, type ExportFormat } from './export.js';
import { bindInstallationKey } from './installation.js';
import { matchFacts, type FactMatch, type MatchOptions } from './match.js';
import { redactSecrets } from './redact.js';
import { factColumns, factRowFromJson, toFact, type FactRow } from './rows.js';
import { prepareSearch, ScopeSizeCache, searchFacts, type SearchOptions, type SearchRead } from './search.js';
import { contentHash, keyedContentHash, validateText } from './text.js';
import { readableTrust, type Actor, type Fact, type Provenance, type SearchResult, type Tombstone, type Trust } from './types.js';
import { forgetFact, tombstoneMatcher, type TombstoneRow } from './forget.js';
import { believedAt, believedNow, recordCorrection, recordUpdate, requireCurrent, versionHistory, type HistoryEntry } from './versions.js';

export type { HistoryEntry, VersionEvent } from './versions.js';

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
   * Only the facts that genuinely match a request (shared words or a close
   * vector, at measured thresholds), best first, each with why; none when
   * nothing does. Forget, correct and update act on nothing else.
   */
  match(scope: Scope, request: string, options?: MatchOptions): Promise<FactMatch[]>;
  recordUse(scope: Scope, factIds: readonly string[], reason: UseReason, actor: Actor): Promise<number>;
  /** The same, in the caller's scoped transaction: the core records a turn's uses with its reply. */
  recordUseIn(tx: ScopedTransaction, factIds: readonly string[], reason: UseReason, actor: Actor): Promise<number>;
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

const liveTrust: readonly Trust[] = ['candidate', 'active', 'verified', 'disputed'];

export function createMemory(options: MemoryOptions): Memory {
  const { database, embedder, key } = options;
  const audit = createAuditLog({ database, key });
  const scopeSizes = new ScopeSizeCache();
  let prepared = false;

  async function prepare(): Promise<void> {
    if (prepared) return;
    await bindInstallationKey(database, key);
    await audit.seal();
    if (embedder.dimensions > 0) await ensureEmbeddingModel(database, embedder.model, embedder.dimensions);
    prepared = true;
  }

  /** The vector for new content, computed before the transaction opens; null when a job will do it. */
  async function vectorFor(content: string): Promise<number[] | null> {
    if (!embedder.local) return null;
    await prepare();
    return embedOne(embedder, content);
  }

  /** The vector of a fact this transaction wrote (no other can have forgotten or changed it yet), or the job that will compute it. */
  async function storeVector(tx: ScopedTransaction, fact: Fact, vector: number[] | null): Promise<void> {
    if (vector !== null) {
      await tx.query(
        `insert into fact_embeddings (fact_id, model, agent_id, person_id, audience, embedding, searchable)
         values ($1, $2, $3, $4, $5, $6::vector, $7)
         on conflict (fact_id, model) do update set embedding = excluded.embedding, searchable = excluded.searchable, created_at = now()`,
        [fact.id, embedder.model, fact.agentId, fact.personId, fact.audience, toSql(vector), ['candidate', 'active', 'verified'].includes(fact.trust) && fact.validTo === null && fact.supersededAt === null],
      );
      return;
    }
    await enqueue(tx, { queue: 'embed', name: 'embed-fact', payload: { factId: fact.id, model: embedder.model }, dedupeKey: `embed:${fact.id}:${embedder.model}`, agentId: fact.agentId, personId: tx.scope.personId });
  }

  async function loadFact(tx: ScopedTransaction, factId: string, forUpdate = false): Promise<Fact> {
    if (!isUuid(factId)) throw new FactNotFoundError(String(factId));
    const { rows } = await tx.query<FactRow>(`select ${factColumns} from facts f where f.id = $1${forUpdate ? ' for update' : ''}`, [factId]);
    const row = rows[0];
    if (row === undefined) throw new FactNotFoundError(factId);
    return toFact(row);
  }

  function trustFor(provenance: Provenance): Trust {
    if (provenance.actor.kind === 'job') return 'candidate';
    if (provenance.actor.kind === 'agent' && provenance.untrusted === true) return 'candidate';
    return 'active';
  }

  /** What `admit` reads, as one SQL expression (jsonb): the live tombstones and the rejected facts of these words ($hash). */
  const admissionExpression = (hash: string) => `jsonb_build_object(
      'tombstones', coalesce((select jsonb_agg(jsonb_build_object('id', t.id, 'person_id', t.person_id, 'content_hash', t.content_hash, 'minhash', t.minhash,
        'hash_kind', t.hash_kind, 'source_message_ids', t.source_message_ids)) from tombstones t where t.lifted_at is null), '[]'::jsonb),
      'rejected', coalesce((select jsonb_agg(f.source_message_ids) from facts f where f.trust = 'rejected' and f.content_hash = ${hash}), '[]'::jsonb))`;

  interface Admission {
    tombstones: Array<TombstoneRow & { id: string; person_id: string | null; source_message_ids: string[] }>;
    rejected: string[][];
  }

  /**
   * Refuse what a tombstone or a rejection covers, or lift the tombstone when
   * the same person says it again, explicitly, in a new message. `read` is
   * what `admissionExpression` read in this transaction, else it is read here.
   */
  async function admit(tx: ScopedTransaction, content: string, hash: string, provenance: Provenance, read?: Admission): Promise<void> {
    const scope = tx.scope;
    const matches = tombstoneMatcher(key, content);
    const admission = read ?? (await tx.query<{ admission: Admission }>(`select ${admissionExpression('$1')} as admission`, [hash])).rows[0]!.admission;
    const sources = provenance.sourceMessageIds ?? [];
    for (const tombstone of admission.tombstones) {
      if (!matches(tombstone)) continue;
      const liftable =
        provenance.explicit === true &&
        provenance.actor.kind === 'person' &&
        scope.personId !== null &&
        tombstone.person_id === scope.personId &&
        sources.length > 0 &&
        sources.every((id) => !tombstone.source_message_ids.includes(id));
      if (!liftable) throw new TombstonedError();
      await tx.query('update tombstones set lifted_at = now(), lifted_by_message_id = $2 where id = $1', [tombstone.id, sources[0]]);
      await audit.append(tx, {
        agentId: scope.agentId,
        personId: scope.personId,
        actor: provenance.actor,
        action: 'tombstone-lift',
        targetKind: 'tombstone',
        targetId: tombstone.id,
        detail: { message_id: sources[0] },
      });
    }
    for (const ids of admission.rejected) {
      const sameSources = sources.length === 0 || sources.some((id) => ids.includes(id));
      const restatedByPerson = provenance.actor.kind === 'person' && provenance.explicit === true;
      if (sameSources && !restatedByPerson) throw new RejectedStatementError();
    }
  }

  async function insertFact(
    tx: ScopedTransaction,
    input: { content: string; hash: string; category: string; audience: 'private' | 'agent'; trust: Trust; provenance: Provenance },
  ): Promise<Fact> {
    const { scope } = tx;
    const personId = input.audience === 'agent' && scope.personId === null ? null : scope.personId;
    const { rows } = await tx.query<FactRow>(
      `insert into facts as f (agent_id, person_id, audience, content, content_hash, category, trust,
         source_message_ids, actor_kind, actor_id, channel, tool, untrusted_input)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
       returning ${factColumns}`,
      [
        scope.agentId,
        personId,
        input.audience,
        input.content,
        input.hash,
        input.category,
        input.trust,
        input.provenance.sourceMessageIds ?? [],
        input.provenance.actor.kind,
        input.provenance.actor.id ?? null,
        input.provenance.channel ?? null,
        input.provenance.tool ?? null,
        input.provenance.untrusted === true,
      ],
    );
    return toFact(rows[0]!);
  }

  /**
   * The text as stored, its unkeyed hash (kept beside it in `facts` to find
   * duplicates, erased when it is forgotten) and its keyed hash (what the
   * audit log may keep of it for good).
   */
  function prepareContent(content: unknown): { content: string; hash: string; keyedHash: string } {
    const valid = validateText(content, 'content');
    const redacted = redactSecrets(valid).text;
    return { content: redacted, hash: contentHash(redacted), keyedHash: keyedContentHash(key, redacted) };
  }

  function validCategory(category: string | undefined): string {
    const value = category ?? 'general';
    if (!/^[a-z][a-z0-9_-]{0,39}$/.test(value)) {
      throw new RosterError('memory_input_invalid', `category must be a short lower-case word (letters, digits, - or _), got ${JSON.stringify(value).slice(0, 60)}.`);
    }
    return value;
  }

  function validProvenance(provenance: Provenance): void {
    for (const id of provenance.sourceMessageIds ?? []) {
      if (!isUuid(id)) throw new RosterError('memory_input_invalid', `sourceMessageIds must be message ids (UUIDs), got ${JSON.stringify(id).slice(0, 60)}.`);
    }
  }

  async function event(tx: ScopedTransaction, actor: Actor, action: string, fact: Fact, detail: Record<string, unknown> = {}) {
    await audit.append(tx, { agentId: tx.scope.agentId, personId: fact.personId, actor, action, targetKind: 'fact', targetId: fact.id, detail });
  }

  /** Move a fact from one of `from` to `to`, with one event. */
  async function transition(scope: Scope, factId: string, from: readonly Trust[], to: Trust, action: string, provenance: Provenance): Promise<Fact> {
    return database.withScope(scope, async (tx) => {
      const fact = await loadFact(tx, factId, true);
      await refuseRestated(tx, fact, action);
      if (!from.includes(fact.trust)) {
        throw new FactStateError(`Cannot ${action} a fact that is ${fact.trust}; it must be ${from.join(' or ')}.`);
      }
      const extra = to === 'rejected' ? ', superseded_at = now()' : '';
      const { rows } = await tx.query<FactRow>(`update facts f set trust = $2${extra} where f.id = $1 returning ${factColumns}`, [factId, to]);
      const updated = toFact(rows[0]!);
      await event(tx, provenance.actor, action, updated, { from: fact.trust, to });
      return updated;
    });
  }

  /** A row whose belief was restated is history: a state change goes to the current version. */
  async function refuseRestated(tx: ScopedTransaction, fact: Fact, action: string): Promise<void> {
    if (fact.restatedAs !== null) await requireCurrent(tx, fact, action);
  }

  /** Correct or update the current version of a fact; see versions.ts for what each records. */
  async function replace(scope: Scope, factId: string, content: string, provenance: Provenance, kind: 'correct' | 'update') {
    const next = prepareContent(content);
    validProvenance(provenance);
    const vector = await vectorFor(next.content);
    return database.withScope(scope, async (tx) => {
      const old = await loadFact(tx, factId, true);
      if (old.trust === 'forgotten') throw new FactStateError(`Cannot ${kind} a fact that is forgotten.`);
      await requireCurrent(tx, old, kind);
      if (!liveTrust.includes(old.trust)) throw new FactStateError(`Cannot ${kind} a fact that is ${old.trust}.`);
      await admit(tx, next.content, next.hash, provenance);
      const written = await insertFact(tx, { ...next, category: old.category, audience: old.audience, trust: trustFor(provenance), provenance });
      const { previous, fact } = kind === 'correct' ? await recordCorrection(tx, old, written) : await recordUpdate(tx, old, written);
      await storeVector(tx, fact, vector);
      await event(tx, provenance.actor, kind, fact, { previous: old.id, ...(kind === 'update' ? { restated: previous.id } : {}), content_hmac: next.keyedHash });
      return { old: previous, fact };
    });
  }

  const memory: Memory = {
    embedder,
    audit,
    prepare,

    async remember(scope, input) {
      const next = prepareContent(input.content);
      const category = validCategory(input.category);
      validProvenance(input.provenance);
      const audience = input.audience ?? (scope.personId === null ? 'agent' : 'private');
      if (audience === 'private' && scope.personId === null) {
        throw new RosterError('memory_input_invalid', 'A private fact needs a person: this scope has none. Use audience "agent".');
      }
      // A group hears everything said there, so its scope reads nothing private: a private fact is told one to one.
      if (audience === 'private' && scope.audience === 'group') {
        throw new RosterError('memory_private_in_group', 'In a group nothing private is kept: tell me in a one-to-one conversation.');
      }
      const vector = await vectorFor(next.content);
      return database.withScope(scope, async (tx) => {
        // The same words as believed now, else as they held until a change (a restatement); and what
        // `admit` reads, in the same statement.
        const { rows } = await tx.query<{ known: (FactRow & { believed_now: boolean }) | null; admission: Admission }>(
          `select (select to_jsonb(k) from (
                    select ${factColumns}, (${believedNow('f')}) as believed_now from facts f
                    where f.content_hash = $1 and f.audience = $2 and f.person_id is not distinct from $3
                      and f.trust = any($4) and f.superseded_at is null
                    order by believed_now desc, f.recorded_at desc limit 1) k) as known,
                  ${admissionExpression('$1')} as admission`,
          [next.hash, audience, audience === 'agent' && scope.personId === null ? null : scope.personId, readableTrust],
        );
        const duplicate = rows[0]!.known === null ? undefined : factRowFromJson(rows[0]!.known as unknown as Record<string, unknown>);
        // Words believed now are not remembered twice. Words that held only until a change are
        // recorded again when a person says them; an automatic path (a job, the model by itself)
        // re-reading old messages gets the past version back instead of reviving it.
        const saidByPerson = input.provenance.actor.kind === 'person' || input.provenance.actor.kind === 'owner';
        if (duplicate !== undefined && (rows[0]!.known!.believed_now || !saidByPerson)) return { fact: toFact(duplicate), created: false };
        await admit(tx, next.content, next.hash, input.provenance, rows[0]!.admission);
        const fact = await insertFact(tx, { ...next, category, audience, trust: trustFor(input.provenance), provenance: input.provenance });
        await storeVector(tx, fact, vector);
        await event(tx, input.provenance.actor, 'remember', fact, { trust: fact.trust, category, audience, content_hmac: next.keyedHash });
        return { fact, created: true };
      });
    },

    async correct(scope, factId, content, provenance) {
      const { old, fact } = await replace(scope, factId, content, provenance, 'correct');
      return { retracted: old, fact };
    },

    async update(scope, factId, content, provenance) {
      const { old, fact } = await replace(scope, factId, content, provenance, 'update');
      return { previous: old, fact };
    },

    async confirm(scope, factId, provenance) {
      return database.withScope(scope, async (tx) => {
        const fact = await loadFact(tx, factId, true);
        await refuseRestated(tx, fact, 'confirm');
        if (!['candidate', 'active', 'verified', 'disputed'].includes(fact.trust)) {
          throw new FactStateError(`Cannot confirm a fact that is ${fact.trust}.`);
        }
        // A person's confirmation is also a use.
        const { rows } = await tx.query<FactRow>(
          `update facts f set trust = 'verified', uses = f.uses + 1, last_used_at = now() where f.id = $1 returning ${factColumns}`,
          [factId],
        );
        const updated = toFact(rows[0]!);
        await event(tx, provenance.actor, 'confirm', updated, { from: fact.trust, to: 'verified' });
        return updated;
      });
    },

    dispute: (scope, factId, provenance) => transition(scope, factId, ['candidate', 'active', 'verified'], 'disputed', 'dispute', provenance),
    reject: (scope, factId, provenance) => transition(scope, factId, ['candidate', 'active', 'verified', 'disputed'], 'rejected', 'reject', provenance),
    restore: (scope, factId, provenance) => transition(scope, factId, ['faded'], 'active', 'restore', provenance),

    forget(scope, factId, provenance) {
      return forgetFact({ database, key, loadFact, event }, scope, factId, provenance);
    },

    async tombstones(scope, options = {}) {
      return database.withScope(scope, async (tx) => {
        const { rows } = await tx.query<{ id: string; fact_id: string | null; person_id: string | null; created_at: Date; actor_kind: Actor['kind'] | null; actor_id: string | null }>(
          `select t.id, t.fact_id, t.person_id, t.created_at, e.actor_kind, e.actor_id
           from tombstones t
           left join lateral (
             select e.actor_kind, e.actor_id from memory_events e
             where e.agent_id = t.agent_id and e.target_kind = 'fact' and e.target_id = t.fact_id::text and e.action = 'forget'
             order by e.seq limit 1
           ) e on true
           where t.lifted_at is null and t.agent_id = $1 and t.person_id is not distinct from $2
             and ($3::timestamptz is null or t.created_at <= $3)
           order by t.created_at desc, t.id`,
          [scope.agentId, scope.personId, options.recordedAt ?? null],
        );
        return rows.map((row) => ({
          id: row.id,
          factId: row.fact_id,
          personId: row.person_id,
          forgottenAt: row.created_at,
          forgottenBy: row.actor_kind === null ? null : { kind: row.actor_kind, ...(row.actor_id === null ? {} : { id: row.actor_id }) },
        }));
      });
    },

    async isTombstoned(scope, content) {
      const matches = tombstoneMatcher(key, validateText(content, 'content'));
      return database.withScope(scope, async (tx) => {
        const { rows } = await tx.query<TombstoneRow>('select content_hash, minhash, hash_kind from tombstones where lifted_at is null');
        return rows.some(matches);
      });
    },

    async get(scope, factId) {
      return database.withScope(scope, async (tx) => {
        const fact = await loadFact(tx, factId);
        if (!readableTrust.includes(fact.trust)) throw new FactNotFoundError(factId);
        return fact;
      });
    },

    async scopeOf(agentId, factId) {
      const personId = await database.adminScope('owner: find the scope of a fact', async (tx) => {
        const { rows } = await tx.query<{ person_id: string | null }>('select person_id from facts where id::text = $1 and agent_id = $2', [factId, agentId]);
        if (rows[0] === undefined) throw new FactNotFoundError(factId);
        return rows[0].person_id;
      });
      return personId === null ? { agentId, personId: null, audience: 'agent' } : { agentId, personId, audience: 'private' };
    },

    async list(scope, options = {}) {
      const limit = Math.min(Math.max(options.limit ?? 200, 1), 10_000);
      return database.withScope(scope, async (tx) => {
        const { rows } = await tx.query<FactRow>(
          `select ${factColumns} from facts f
           where f.trust = any($1) and ($2::text is null or f.category = $2) and ${believedNow('f')}
           order by f.recorded_at desc, f.id limit $3`,
          [readableTrust, options.category ?? null, limit],
        );
        return rows.map(toFact);
      });
    },

    async history(scope, factId) {
      return database.withScope(scope, async (tx) => {
        const fact = await loadFact(tx, factId);
        return versionHistory(tx, fact.id);
      });
    },

    async asOf(scope, at) {
      const validAt = at.validAt ?? new Date();
      const recordedAt = at.recordedAt ?? new Date();
      for (const [name, value] of [['validAt', validAt], ['recordedAt', recordedAt]] as const) {
        if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw new RosterError('memory_input_invalid', `${name} must be a valid time.`);
      }
      return database.withScope(scope, (tx) => believedAt(tx, validAt, recordedAt));
    },

    async search(scope, query, options) {
      await prepare();
      return searchFacts(database, embedder, scope, query, { scopeSizes, ...options });
    },

    async prepareSearch(scope, query, options) {
      await prepare();
      return prepareSearch(embedder, scope, query, { scopeSizes, ...options });
    },

    async match(scope, request, options) {
      await prepare();
      return matchFacts(database, embedder, scope, request, { scopeSizes, ...options });
    },

    async recordUse(scope, factIds, reason, actor) {
      if (factIds.filter(isUuid).length === 0) return 0;
      return database.withScope(scope, (tx) => memory.recordUseIn(tx, factIds, reason, actor));
    },

    async recordUseIn(tx, factIds, reason, actor) {
      const ids = factIds.filter(isUuid);
      if (ids.length === 0) return 0;
      const { rows } = await tx.query<FactRow>(
        `update facts f set uses = f.uses + 1, last_used_at = now() where f.id = any($1) and f.trust = any($2) returning ${factColumns}`,
        [ids, readableTrust],
      );
      if (rows.length > 0) {
        await audit.appendMany(
          tx,
          rows.map((row) => {
            const fact = toFact(row);
            return { agentId: tx.scope.agentId, personId: fact.personId, actor, action: 'use', targetKind: 'fact' as const, targetId: fact.id, detail: { reason } };
          }),
        );
      }
      return rows.length;
    },

    embedFacts(options) {
      return embedFacts(database, embedder, options);
    },

    async export(scope, format) {
      return database.withScope(scope, async (tx) => {
        const { rows } = await tx.query<FactRow>(`select ${factColumns} from facts f order by f.recorded_at, f.id`);
        return renderExport(tx.scope, rows.map(toFact), format);
      });
    },

    async personVersions(scope) {
      if (scope.audience !== 'private' || scope.personId === null) throw new RosterError('scope_invalid', "A person's facts are read in their private scope.");
      return database.withScope(scope, async (tx) => {
        // Row-level security limits the rows to this agent, this person's and the agent-wide ones; the filter keeps the person's own.
        const { rows } = await tx.query<FactRow>(`select ${factColumns} from facts f where f.person_id = $1 order by f.recorded_at, f.id`, [tx.scope.personId]);
        return rows.map(toFact);
      });
    },
  };
  return memory;
}
