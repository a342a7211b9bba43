import { AsyncLocalStorage } from 'node:async_hooks';
import { RosterError } from '@roster/errors';
import pg from 'pg';
import { lastRow, transaction } from './transaction.js';
import { assertScope, type Scope } from './scope.js';

/** The rows and count of one statement, as `pg` returns them. */
export type QueryResult<Row> = pg.QueryResult<Row extends pg.QueryResultRow ? Row : pg.QueryResultRow>;

/** One transaction handed to a scoped or admin function. */
export interface Transaction {
  query<Row extends pg.QueryResultRow = pg.QueryResultRow>(text: string, params?: readonly unknown[]): Promise<pg.QueryResult<Row>>;
}

/** A transaction that runs as the application role, inside one scope. */
export interface ScopedTransaction extends Transaction {
  readonly scope: Scope;
  /** The scope's agent's audit chain where it ends, locked for this transaction: read when `ScopeOptions.chainHeads` asked. */
  readonly chainHeads?: readonly ChainHeadRow[];
}

/** An audit chain's head as `roster_event_heads` reads it: where the chain ends, and the time its next events are stamped with. */
export interface ChainHeadRow {
  agent_id: string;
  seq: string | number;
  hash: string | null;
  at: string;
}

/**
 * Hands an admin transaction over to a scope, for the rest of it: the role
 * becomes `roster_app` and the scope's settings are set, so row-level
 * security applies to everything after. The admin transaction it came from
 * refuses further statements; a later call moves to another scope, and the
 * handle of the one before sends nothing more. Nothing hands it back to
 * `roster_ops`.
 */
export type EnterScope = (scope: Scope, options?: ScopeOptions) => Promise<ScopedTransaction>;

/** What a scoped transaction may set besides its scope. */
export interface ScopeOptions {
  /**
   * Settings local to the transaction, by name (`hnsw.ef_search`,
   * `enable_sort`): names of lower-case words joined by dots, values any text.
   * The scope's own settings (`roster.*`) and the role cannot be named.
   */
  settings?: Readonly<Record<string, string>>;
  /**
   * Also lock the scope's agent's audit chain for the transaction and read
   * where it ends, in the same statement (`tx.chainHeads`), for a transaction
   * that appends to it. `roster_event_heads` reads as its owner, so that the
   * statement plans it before the role changes does not matter; nothing that
   * row-level security guards is read there.
   */
  chainHeads?: boolean;
}

/** Which database Roster talks to, for health checks and `doctor`. */
export interface DatabaseInfo {
  kind: 'embedded' | 'server';
  /** The Postgres server version, e.g. `18.6`. */
  postgres: string;
  /** The installed pgvector version, or null before the first migration. */
  pgvector: string | null;
}

/**
 * The one database handle of the product. It exposes no raw connection: every
 * statement runs either inside a scope (as the unprivileged application role,
 * so row-level security applies), or unscoped as that same role (and so sees
 * no memory row), or through `adminScope`, whose every use names its reason.
 */
export interface Database {
  readonly kind: 'embedded' | 'server';
  /** Where it is, without any password: a folder or a connection string. */
  readonly location: string;

  /**
   * Run `fn` in one transaction as `roster_app` with the scope's settings.
   * Nested calls are refused: a scope is one transaction, not a stack.
   * `options.settings` are more settings for this transaction only (the
   * planner's and pgvector's, for a graph search), sent in the same round
   * trip and statement as the scope's.
   */
  withScope<T>(scope: Scope, fn: (tx: ScopedTransaction) => Promise<T>, options?: ScopeOptions): Promise<T>;

  /**
   * Run `fn` in one transaction as `roster_ops`: the role of the owner's
   * tools, the router that stores an inbound message before its person is
   * known, and the jobs that work across agents. It reads across scopes but
   * owns nothing: no schema change, no delete of the audit log. `reason` is
   * logged so each use stays visible. `enter` hands the rest of the
   * transaction to a scope (the core reads an agent's prompt in the
   * transaction that stored the message it answers).
   */
  adminScope<T>(reason: string, fn: (tx: Transaction, enter: EnterScope) => Promise<T>): Promise<T>;

  /**
   * Run `fn` in one transaction as the connecting role, which owns the
   * schema: migrations, an embedding model's index, maintenance that needs
   * ownership. Row-level security still applies to it (it is forced on
   * every table that holds people's words). Never for everyday work.
   */
  ownerScope<T>(reason: string, fn: (tx: Transaction) => Promise<T>): Promise<T>;

  /**
   * Run `fn` on one connection as the connecting role, outside any
   * transaction: each statement commits on its own. For the maintenance
   * Postgres refuses inside a transaction block (VACUUM, CHECKPOINT), which
   * needs the owner. Nothing is rolled back if `fn` fails half-way, so it
   * holds only statements that are safe to repeat. Never for everyday work.
   */
  ownerSession<T>(reason: string, fn: (session: Transaction) => Promise<T>): Promise<T>;

  /** One statement as the application role with no scope: sees no memory row. */
  query<Row extends pg.QueryResultRow = pg.QueryResultRow>(text: string, params?: readonly unknown[]): Promise<pg.QueryResult<Row>>;

  info(): Promise<DatabaseInfo>;
  close(): Promise<void>;
}

/** A string as an SQL literal. */
function literal(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/**
 * The statement that makes a transaction a scope's: the application role and
 * the scope's settings, with `options.settings` (the planner's and pgvector's),
 * in one `select set_config(…)`. Sent with BEGIN in one round trip, or alone
 * when an admin transaction enters the scope.
 */
function scopeOpening(scope: Scope, options: ScopeOptions | undefined): { checked: Scope; opening: string } {
  const checked = assertScope(scope);
  const extra = Object.entries(options?.settings ?? {}).map(([name, value]) => {
    if (!/^[a-z][a-z_]*(\.[a-z][a-z_]*)?$/.test(name) || name.startsWith('roster.') || name === 'role' || name === 'session_authorization') {
      throw new RosterError('scope_setting_invalid', `A scoped transaction cannot set ${JSON.stringify(name)}: name a planner or extension setting.`);
    }
    return `, set_config(${literal(name)}, ${literal(String(value))}, true)`;
  });
  // The values are checked uuids and a known audience; quoted all the same. `set_config('role', …, true)` is
  // SET LOCAL ROLE (the role is a setting like the others), so the role and the settings are one statement.
  const opening =
    `select set_config('role', 'roster_app', true), set_config('roster.agent_id', ${literal(checked.agentId)}, true), ` +
    `set_config('roster.person_id', ${literal(checked.personId ?? '')}, true), set_config('roster.audience', ${literal(checked.audience)}, true), ` +
    `set_config('roster.conversation_id', ${literal(checked.conversationId ?? '')}, true)${extra.join('')}` +
    (options?.chainHeads === true
      ? `, (select coalesce(jsonb_agg(to_jsonb(h)), '[]'::jsonb) from roster_event_heads(array[${literal(checked.agentId)}]::uuid[]) h) as chain_heads`
      : '');
  return { checked, opening };
}

/** The chain heads the scope's opening read (`ScopeOptions.chainHeads`), as a scoped transaction holds them. */
function openedChainHeads(opened: Record<string, unknown> | undefined): { chainHeads?: readonly ChainHeadRow[] } {
  const chainHeads = opened?.chain_heads as ChainHeadRow[] | undefined;
  return chainHeads === undefined ? {} : { chainHeads };
}

/** What a scoped function may ask of the context it runs in. */
const activeScope = new AsyncLocalStorage<{ database: object; scope: Scope | 'admin' }>();


export interface PoolDatabaseOptions {
  kind: 'embedded' | 'server';
  location: string;
  pool: pg.Pool;
  /** Called after the pool is closed (the embedded database closes PGlite here). */
  onClose?: () => Promise<void>;
  /** Told of each admin scope's reason, for the log. */
  onAdmin?: (reason: string) => void;
}

/** A Database over a `pg` pool; both the embedded and the server kinds use it. */
export function createPoolDatabase(options: PoolDatabaseOptions): Database {
  const { pool, kind, location } = options;
  let closed = false;

  function ensureOpen(): void {
    if (closed) throw new RosterError('database_closed', 'The database was closed; open it again before querying.');
  }

  function refuseNesting(): void {
    if (activeScope.getStore() !== undefined) {
      throw new RosterError(
        'scope_nested',
        'A scoped or admin transaction was opened inside another one. Finish the first before starting the next.',
      );
    }
  }

  const database: Database = {
    kind,
    location,

    async withScope(scope, fn, scopeOptions) {
      ensureOpen();
      refuseNesting();
      const { checked, opening } = scopeOpening(scope, scopeOptions);
      return transaction(
        pool,
        async (client, opened) => {
          const tx: ScopedTransaction = {
            scope: checked,
            query: (text, params) => client.query(text, params as unknown[]),
            ...openedChainHeads(opened),
          };
          return activeScope.run({ database, scope: checked }, () => fn(tx));
        },
        opening,
      );
    },

    async adminScope(reason, fn) {
      ensureOpen();
      refuseNesting();
      if (reason.trim() === '') throw new RosterError('admin_reason_missing', 'adminScope needs a reason that names the tool using it.');
      options.onAdmin?.(reason);
      return transaction(
        pool,
        async (client) => {
          // Which of this transaction's handles may still send: the admin one until a scope is entered, then that scope's.
          let current = 0;
          const handle = (id: number) => {
            if (id !== current) throw new RosterError('scope_switched', 'This transaction was handed to another scope; its earlier handle sends nothing more.');
          };
          const tx: Transaction = {
            query: async (text, params) => {
              handle(0);
              return client.query(text, params as unknown[]);
            },
          };
          let entered = 0;
          // The settings an earlier scope of this transaction set, put back before the next scope's.
          let extras: string[] = [];
          const enter: EnterScope = async (scope, scopeOptions) => {
            const { checked, opening } = scopeOpening(scope, scopeOptions);
            const reset = extras.map((name) => `set local ${name} to default; `).join('');
            extras = Object.keys(scopeOptions?.settings ?? {});
            entered += 1;
            const id = entered;
            current = -1;
            const opened = lastRow(await client.query(`${reset}${opening}`));
            current = id;
            return {
              scope: checked,
              ...openedChainHeads(opened),
              query: async (text, params) => {
                handle(id);
                return client.query(text, params as unknown[]);
              },
            };
          };
          return activeScope.run({ database, scope: 'admin' }, () => fn(tx, enter));
        },
        'set local role roster_ops',
      );
    },

    async ownerScope(reason, fn) {
      ensureOpen();
      refuseNesting();
      if (reason.trim() === '') throw new RosterError('admin_reason_missing', 'ownerScope needs a reason that names the tool using it.');
      options.onAdmin?.(`owner: ${reason}`);
      return transaction(pool, async (client) => {
        const tx: Transaction = { query: (text, params) => client.query(text, params as unknown[]) };
        return activeScope.run({ database, scope: 'admin' }, () => fn(tx));
      });
    },

    async ownerSession(reason, fn) {
      ensureOpen();
      refuseNesting();
      if (reason.trim() === '') throw new RosterError('admin_reason_missing', 'ownerSession needs a reason that names the tool using it.');
      options.onAdmin?.(`owner session: ${reason}`);
      const client = await pool.connect();
      let broken = false;
      try {
        const session: Transaction = { query: (text, params) => client.query(text, params as unknown[]) };
        return await activeScope.run({ database, scope: 'admin' }, () => fn(session));
      } catch (error) {
        // A connection left inside a transaction by a failed statement is not handed to the next caller.
        broken = true;
        throw error;
      } finally {
        client.release(broken);
      }
    },

    async query(text, params) {
      ensureOpen();
      refuseNesting();
      return transaction(pool, (client) => client.query(text, params as unknown[]), 'set local role roster_app');
    },

    async info() {
      ensureOpen();
      const { rows } = await pool.query<{ version: string; pgvector: string | null }>(
        `select current_setting('server_version') as version,
                (select extversion from pg_extension where extname = 'vector') as pgvector`,
      );
      const row = rows[0];
      return { kind, postgres: row?.version.split(' ')[0] ?? 'unknown', pgvector: row?.pgvector ?? null };
    },

    async close() {
      if (closed) return;
      closed = true;
      await pool.end();
      await options.onClose?.();
    },
  };
  return database;
}
