// The jobs benchmark's statement timer: a Database that times each statement by kind, and each transaction.
import type { Database, Transaction } from '@roster/db';

/** Time spent per kind of statement, and in the transactions around them. */
export interface StatementTimes {
  byKind: Map<string, { ms: number; calls: number; each: number[] }>;
  /** Wall time of every adminScope call (statements + begin/commit + pool). */
  transactionsMs: number;
  transactions: number;
  /** Each adminScope call's wall time, in order (for fade: one per batch). */
  eachTransaction: number[];
}

/**
 * The same database, with every statement sent through an admin scope timed
 * by `classify(sql)`. Measuring, not replacing: each call goes to the real
 * database unchanged.
 */
export function timedDatabase(database: Database, classify: (sql: string) => string): { database: Database; times: StatementTimes } {
  const times: StatementTimes = { byKind: new Map(), transactionsMs: 0, transactions: 0, eachTransaction: [] };
  const timed: Database = {
    ...database,
    kind: database.kind,
    location: database.location,
    async adminScope(reason, fn) {
      const started = performance.now();
      try {
        return await database.adminScope(reason, (tx, enter) =>
          fn({
            async query(text, params) {
              const begun = performance.now();
              try {
                return await tx.query(text, params);
              } finally {
                const kind = classify(text);
                const entry = times.byKind.get(kind) ?? { ms: 0, calls: 0, each: [] };
                const ms = performance.now() - begun;
                entry.ms += ms;
                entry.calls += 1;
                entry.each.push(ms);
                times.byKind.set(kind, entry);
              }
            },
          } satisfies Transaction, enter),
        );
      } finally {
        const ms = performance.now() - started;
        times.transactionsMs += ms;
        times.transactions += 1;
        times.eachTransaction.push(ms);
      }
    },
  };
  return { database: timed, times };
}

