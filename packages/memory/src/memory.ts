import { randomUUID } from 'node:crypto';
import { enqueue, isUuid, type ChainHeadRow, type Scope, type ScopedTransaction } from '@roster/db';
import { RosterError } from '@roster/errors';
import { toSql } from 'pgvector';
import { admit } from './admission.js';
import { createAuditLog, type MemoryEvent } from './audit.js';
import { embedFacts } from './embed-facts.js';
import { embedOne, ensureEmbeddingModel } from './embeddings.js';
import { FactNotFoundError, FactStateError } from './errors.js';
import { renderExport } from './export.js';
import { liveTrust, prepareContent, trustFor, validCategory, validProvenance } from './fact-input.js';
import { insertFact, insertFactWithVector, loadFact, newFactPerson } from './fact-store.js';
import { readOrRemember } from './remember-statement.js';
import { bindInstallationKey } from './installation.js';
import { matchFacts } from './match.js';
import type { Memory, MemoryOptions, UseReason } from './memory-types.js';
import { factColumns, factRowFromJson, toFact, type FactRow } from './rows.js';
import { embedQuery, prepareSearch, ScopeSizeCache, searchFacts } from './search.js';
import { validateText } from './text.js';
import { readableTrust, type Actor, type Fact, type Provenance, type Trust } from './types.js';
import { forgetFact, tombstoneMatcher, type TombstoneRow } from './forget.js';
import { believedAt, believedNow, recordCorrection, recordUpdate, requireCurrent, versionHistory } from './versions.js';

export type { Memory, MemoryOptions, RememberInput, UseReason } from './memory-types.js';
export type { HistoryEntry, VersionEvent } from './versions.js';

/** The agent's audit chain's head, which the transaction opened by locking (`ScopeOptions.chainHeads`). */
function headsOf(tx: ScopedTransaction): readonly ChainHeadRow[] {
  if (tx.chainHeads === undefined) throw new RosterError('audit_head_missing', 'The transaction did not open with the audit chain locked (chainHeads).');
  return tx.chainHeads;
}

/** A `use` event for each fact, by `actor`, in the transaction's agent's chain. */
function useEvents(tx: ScopedTransaction, facts: ReadonlyArray<{ id: string; personId: string | null }>, reason: UseReason, actor: Actor): MemoryEvent[] {
  return facts.map((fact) => ({ agentId: tx.scope.agentId, personId: fact.personId, actor, action: 'use', targetKind: 'fact', targetId: fact.id, detail: { reason } }));
}

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
    const next = prepareContent(key, content);
    validProvenance(provenance);
    const vector = await vectorFor(next.content);
    return database.withScope(scope, async (tx) => {
      const old = await loadFact(tx, factId, true);
      if (old.trust === 'forgotten') throw new FactStateError(`Cannot ${kind} a fact that is forgotten.`);
      await requireCurrent(tx, old, kind);
      if (!liveTrust.includes(old.trust)) throw new FactStateError(`Cannot ${kind} a fact that is ${old.trust}.`);
      await admit({ key, audit }, tx, next.content, next.hash, provenance);
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
      const next = prepareContent(key, input.content);
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
      const written = { ...next, category, audience, trust: trustFor(input.provenance), provenance: input.provenance };
      const detail = { trust: written.trust, category, audience, content_hmac: next.keyedHash };
      // With a vector, the transaction opens by locking the agent's audit chain and reading where it ends.
      return database.withScope(
        scope,
        async (tx) => {
          // The fact with its vector and its event, linked once to that head, for whichever statement writes them.
          const id = randomUUID();
          const rememberEvent = { agentId: tx.scope.agentId, personId: newFactPerson(tx, audience), actor: input.provenance.actor, action: 'remember', targetKind: 'fact' as const, targetId: id, detail };
          const write =
            vector === null
              ? null
              : { fact: { ...written, id }, keyedHash: next.keyedHash, vector: { model: embedder.model, value: toSql(vector) as string }, events: audit.link(headsOf(tx), [rememberEvent]).store };
          // The same words as believed now, else as they held until a change (a restatement), and what `admit`
          // reads; when none of them stands in the way, the fact, its vector and its audit event too: one statement.
          const { read, fact: remembered } = await readOrRemember(tx, key, { hash: next.hash, audience }, write);
          if (remembered !== null) return { fact: remembered, created: true };
          const duplicate = read.known === null ? undefined : factRowFromJson(read.known as unknown as Record<string, unknown>);
          // Words believed now are not remembered twice. Words that held only until a change are
          // recorded again when a person says them; an automatic path (a job, the model by itself)
          // re-reading old messages gets the past version back instead of reviving it.
          const saidByPerson = input.provenance.actor.kind === 'person' || input.provenance.actor.kind === 'owner';
          if (duplicate !== undefined && (read.known!.believed_now || !saidByPerson)) return { fact: toFact(duplicate), created: false };
          const { lifted } = await admit({ key, audit }, tx, next.content, next.hash, input.provenance, read.admission);
          if (write === null || lifted > 0) {
            // The vector as a job, or the chain moved on since its head was read (a tombstone lifted): a statement each.
            const fact = await insertFact(tx, written);
            await storeVector(tx, fact, vector);
            await event(tx, input.provenance.actor, 'remember', fact, detail);
            return { fact, created: true };
          }
          // The fact, its vector and its audit event, linked to the head the transaction opened with: one statement.
          return { fact: await insertFactWithVector(tx, write.fact, write.vector, write.events), created: true };
        },
        { chainHeads: vector !== null },
      );
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

    async embedQuery(query) {
      await prepare();
      return embedQuery(embedder, query);
    },

    async match(scope, request, options) {
      await prepare();
      return matchFacts(database, embedder, scope, request, { scopeSizes, ...options });
    },

    async recordUse(scope, factIds, reason, actor) {
      if (factIds.filter(isUuid).length === 0) return 0;
      return database.withScope(scope, (tx) => memory.countUses(tx, factIds, reason, actor), { chainHeads: true });
    },

    usesAlong(tx, facts, reason, actor) {
      const used = [...new Map(facts.filter((fact) => isUuid(fact.id)).map((fact) => [fact.id, fact])).values()];
      if (used.length === 0) return null;
      const { store } = audit.link(headsOf(tx), useEvents(tx, used, reason, actor));
      // roster_count_uses (migration 0038) counts them and stores the events, or does nothing and reads false; only
      // once `condition` holds (a case, not an and, whose sides Postgres may evaluate in either order).
      const value = JSON.stringify({ ids: used.map((fact) => fact.id), trust: readableTrust, events: JSON.parse(store.value) as unknown });
      return { value, sql: (parameter, condition) => `select 1 where case when ${condition} then roster_count_uses(${parameter}::jsonb) else false end` };
    },

    async countUses(tx, factIds, reason, actor) {
      const ids = factIds.filter(isUuid);
      if (ids.length === 0) return 0;
      // Only the facts no other transaction holds: this transaction holds the chain, and every other writer locks a fact before it.
      const { rows } = await tx.query<FactRow>(
        `update facts f set uses = f.uses + 1, last_used_at = now()
         where f.id in (select h.id from facts h where h.id = any($1) and h.trust = any($2) for update skip locked)
         returning ${factColumns}`,
        [ids, readableTrust],
      );
      if (rows.length === 0) return 0;
      const { store } = audit.link(headsOf(tx), useEvents(tx, rows.map(toFact), reason, actor));
      await tx.query(store.sql('$1', 'true'), [store.value]);
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
