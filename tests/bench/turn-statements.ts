import type { Database, ScopedTransaction, Transaction } from '@roster/db';

/**
 * Counts what the product sends to Postgres, at the Database layer: each
 * statement a transaction's function runs, plus the statements the layer
 * itself sends around it (packages/db/src/database.ts: begin and the scope's
 * role and settings, one `select set_config(…)`, in one round trip, then
 * commit; an admin transaction's `set local role`). Every call
 * is passed on as it is.
 */
export interface StatementCounter {
  statements: number;
  transactions: number;
  /** While set, each statement's time by its opening words, and the whole time of each transaction. */
  timings?: StatementTimings;
}

export interface StatementTimings {
  statements: Map<string, { calls: number; ms: number }>;
  /** Time inside the layer's transactions (and `query`), statements included. */
  transactionMs: number;
}

/** A statement's opening words, as its row in the table of where a turn's time goes. */
function statementLabel(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= 60 ? flat : `${flat.slice(0, 57)}…`;
}

async function timed<T>(timings: StatementTimings | undefined, label: string | null, run: () => Promise<T>): Promise<T> {
  if (timings === undefined) return run();
  const started = performance.now();
  try {
    return await run();
  } finally {
    const ms = performance.now() - started;
    if (label === null) timings.transactionMs += ms;
    else {
      const entry = timings.statements.get(label) ?? { calls: 0, ms: 0 };
      entry.calls += 1;
      entry.ms += ms;
      timings.statements.set(label, entry);
    }
  }
}

/** Begin, the opening (the role and the scope's settings are one `select set_config(…)`; an admin's `set local role`), commit. */
const layerStatements = { withScope: 3, adminScope: 3, ownerScope: 2, query: 3 } as const;

export function countStatements(database: Database, counter: StatementCounter): Database {
  const counted = <T extends Transaction>(tx: T): T =>
    ({
      ...tx,
      query: (text: string, params?: readonly unknown[]) => {
        counter.statements += 1;
        return timed(counter.timings, statementLabel(text), () => tx.query(text, params));
      },
    }) as T;
  const open = (kind: keyof typeof layerStatements) => {
    counter.transactions += 1;
    counter.statements += layerStatements[kind];
  };
  return {
    kind: database.kind,
    location: database.location,
    withScope: (scope, fn, options) => {
      open('withScope');
      return timed(counter.timings, null, () => database.withScope(scope, (tx) => fn(counted<ScopedTransaction>(tx)), options));
    },
    adminScope: (reason, fn) => {
      open('adminScope');
      return timed(counter.timings, null, () =>
        database.adminScope(reason, (tx, enter) =>
          fn(counted(tx), async (scope, options) => {
            // The role and the scope's settings: one statement.
            counter.statements += 1;
            return counted(await timed(counter.timings, 'enter a scope: the role and the scope’s settings', () => enter(scope, options)));
          }),
        ),
      );
    },
    ownerScope: (reason, fn) => {
      open('ownerScope');
      return timed(counter.timings, null, () => database.ownerScope(reason, (tx) => fn(counted(tx))));
    },
    ownerSession: (reason, fn) => database.ownerSession(reason, (session) => fn(counted(session))),
    query: (text, params) => {
      open('query');
      counter.statements += 1;
      return timed(counter.timings, null, () => timed(counter.timings, statementLabel(text), () => database.query(text, params)));
    },
    info: () => database.info(),
    close: () => database.close(),
  };
}
