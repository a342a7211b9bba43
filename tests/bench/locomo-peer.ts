// The LoCoMo bench's peer, which is not Roster: SQLite's FTS5 through better-sqlite3.
import Sqlite from 'better-sqlite3';

export interface Peer {
  add(conversation: number, diaId: string, text: string): void;
  search(conversation: number, question: string): string[];
  close(): void;
}

/**
 * The peer: one FTS5 table in an in-memory SQLite database, a row per turn,
 * tokenizer porter (English stemming over unicode61), ranked by FTS5's bm25().
 */
export function createPeer(limit: number): Peer {
  const sqlite = new Sqlite(':memory:');
  sqlite.exec(`create virtual table turns using fts5(text, conversation unindexed, dia_id unindexed, tokenize = 'porter')`);
  const insert = sqlite.prepare('insert into turns (text, conversation, dia_id) values (?, ?, ?)');
  const search = sqlite.prepare<[string, number, number], { dia_id: string }>(
    'select dia_id from turns where turns match ? and conversation = ? order by rank limit ?',
  );
  return {
    add: (conversation: number, diaId: string, text: string) => {
      insert.run(text, conversation, diaId);
    },
    /** The question's words (as memory.search splits them), each quoted, joined by OR. */
    search(conversation: number, question: string): string[] {
      const words = [...new Set(question.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((word) => word.length > 0))];
      if (words.length === 0) return [];
      const match = words.map((word) => `"${word.replaceAll('"', '""')}"`).join(' OR ');
      return search.all(match, conversation, limit).map((row) => row.dia_id);
    },
    close: () => sqlite.close(),
  };
}

export function sqliteVersion(): string {
  const sqlite = new Sqlite(':memory:');
  try {
    return (sqlite.prepare('select sqlite_version() as version').get() as { version: string }).version;
  } finally {
    sqlite.close();
  }
}
