/**
 * What a `roster db serve` client may not run. The embedded database is one
 * Postgres session that every Roster process on the folder shares, so what
 * a served client leaves in that session (a role, a setting, a prepared
 * statement, a temporary table, a LISTEN, a held lock or cursor) is seen by
 * every other process's next statement. The gate reads each statement before
 * it reaches the database and refuses those that could leave something
 * behind; what is confined to a transaction (SET LOCAL, set_config(…, true),
 * SET TRANSACTION, SET CONSTRAINTS, pg_advisory_xact_lock) passes.
 *
 * It reads SQL as Postgres's lexer does (comments, nested block comments,
 * quoted strings and names, escape strings, dollar quoting, several
 * statements in one query) and errs on the side of refusing: a statement it
 * cannot prove harmless is refused. Code that runs later (DO blocks,
 * function bodies) is read too, and dynamic SQL in it (EXECUTE) is refused,
 * since what it will run cannot be read.
 */

/** Why a statement is refused: the message the client sees, and what to do instead. */
export interface SessionChange {
  message: string;
  hint: string;
}

/** Every refusal's message starts so; the gate recognises its own errors by it. */
export const refusalPrefix = 'roster db serve: ';

const refusals = {
  role: {
    message: 'SET ROLE and SET SESSION AUTHORIZATION would change the role of every Roster process that shares this database',
    hint: 'Change the role for one transaction: BEGIN; SET LOCAL ROLE roster_ops; …; COMMIT;',
  },
  setting: {
    message: 'SET and RESET would change this setting for every Roster process that shares this database',
    hint: 'Change it for one transaction: BEGIN; SET LOCAL name = value; …; COMMIT; (or set_config(name, value, true) inside it).',
  },
  setConfig: {
    message: 'set_config would change this setting for every Roster process that shares this database unless its third argument is true',
    hint: 'Call set_config(name, value, true) inside a transaction: BEGIN; SELECT set_config(…, true); …; COMMIT;',
  },
  prepared: {
    message: 'prepared statements would outlive this connection in the session every Roster process shares',
    hint: 'Use unnamed statements: turn off your driver\'s server-side prepared statements or statement cache (for example prepareThreshold=0).',
  },
  temporary: {
    message: 'temporary tables and other temporary objects would be seen by every Roster process that shares this database',
    hint: 'Use a WITH query, or a regular table that you drop when done.',
  },
  listen: {
    message: 'LISTEN and UNLISTEN would outlive this connection in the session every Roster process shares',
    hint: 'Notifications cannot be received through roster db serve; use a server Postgres for that.',
  },
  lock: {
    message: 'session-level advisory locks would be held for every Roster process that shares this database',
    hint: 'Take a transaction-level lock instead: BEGIN; SELECT pg_advisory_xact_lock(…); …; COMMIT;',
  },
  cursor: {
    message: 'a cursor WITH HOLD would outlive its transaction in the session every Roster process shares',
    hint: 'Declare the cursor without HOLD, inside a transaction.',
  },
  session: {
    message: 'DISCARD and LOAD act on the session every Roster process shares',
    hint: 'They cannot be run through roster db serve.',
  },
  persistent: {
    message: 'ALTER SYSTEM and ALTER ROLE or DATABASE … SET would change the settings of the session every Roster process shares',
    hint: 'They cannot be run through roster db serve.',
  },
  dynamic: {
    message: 'dynamic SQL (EXECUTE) in a DO block or function cannot be checked for changes to the session every Roster process shares',
    hint: 'Write the statements out, one by one, or run the work through a Roster command.',
  },
  copyIn: {
    message: 'COPY … FROM STDIN would stop the embedded database for every Roster process that shares it (its socket server cannot take the rows)',
    hint: 'Load the rows with INSERT, several rows per statement; COPY … TO STDOUT works.',
  },
  functionCall: {
    message: 'the fastpath function call is not available',
    hint: 'Call the function in a SELECT.',
  },
} satisfies Record<string, SessionChange>;

export type RefusalKind = keyof typeof refusals;

/** The refusal of one kind, its message prefixed so that the gate can recognise it. */
export function refusal(kind: RefusalKind): SessionChange {
  return { message: refusalPrefix + refusals[kind].message, hint: refusals[kind].hint };
}

type Token = { kind: 'word' | 'name' | 'string' | 'symbol'; text: string };

/** The refusal a query calls for, or undefined when nothing in it can change the session. */
export function sessionChange(sql: string): SessionChange | undefined {
  const kind = examine(tokenize(sql), false);
  return kind === undefined ? undefined : refusal(kind);
}

/** Words after which a PL/pgSQL statement starts (besides `;`). */
const blockWords = new Set(['begin', 'then', 'else', 'loop', 'declare']);
/** Statements that leave something in the session, or act on all of it, whatever follows. */
const sessionStatements: Record<string, RefusalKind> = {
  reset: 'setting',
  prepare: 'prepared',
  execute: 'prepared',
  deallocate: 'prepared',
  listen: 'listen',
  unlisten: 'listen',
  discard: 'session',
  load: 'session',
};
const advisoryLock = /^pg_(try_)?advisory_(un)?lock(_shared|_all)?$/;

function examine(tokens: Token[], inBody: boolean): RefusalKind | undefined {
  for (let index = 0; index < tokens.length; index += 1) {
    const token = tokens[index]!;
    if (token.kind !== 'word' && token.kind !== 'name') continue;
    const name = token.text;
    if (name === 'temp' || name === 'temporary') return 'temporary';
    // `pg_temp` names the temporary schema; in a function's `set search_path = …, pg_temp` it keeps that schema last, as it should.
    if (name.startsWith('pg_temp') && (isSymbol(tokens[index + 1], '.') || !inFunctionDefinition(tokens, index))) return 'temporary';
    if (name === 'set_config' && !isLocalSetConfig(tokens, index)) return 'setConfig';
    if (advisoryLock.test(name)) return 'lock';
    if (token.kind === 'word' && name === 'hold' && isWord(tokens[index - 1], 'with')) return 'cursor';
    if (inBody && token.kind === 'word' && ['execute', 'reset', 'listen', 'unlisten', 'prepare', 'deallocate', 'discard'].includes(name)) {
      return name === 'execute' ? 'dynamic' : sessionStatements[name];
    }
  }
  // pg_settings takes an UPDATE as a SET of the session.
  if (tokens.some((token) => isWord(token, 'pg_settings')) && tokens.some((token) => isWord(token, 'update'))) return 'setting';

  for (let start = 0; start < tokens.length; start += 1) {
    const previous = tokens[start - 1];
    const starts = previous === undefined || isSymbol(previous, ';') || (inBody && previous.kind === 'word' && blockWords.has(previous.text));
    if (!starts) continue;
    let end = start;
    while (end < tokens.length && !isSymbol(tokens[end], ';')) end += 1;
    const found = examineStatement(tokens.slice(start, end), inBody);
    if (found !== undefined) return found;
  }
  return undefined;
}

function examineStatement(statement: Token[], inBody: boolean): RefusalKind | undefined {
  const [first, second] = statement;
  if (first?.kind !== 'word') return undefined;
  switch (first.text) {
    case 'set': {
      if (second?.kind === 'word' && ['local', 'transaction', 'constraints'].includes(second.text)) return undefined;
      return changesRole(statement) ? 'role' : 'setting';
    }
    case 'reset':
      return changesRole(statement) ? 'role' : 'setting';
    case 'alter': {
      if (isWord(second, 'system')) return 'persistent';
      const settings = statement.some((token) => isWord(token, 'set') || isWord(token, 'reset'));
      if (settings && (isWord(second, 'role') || isWord(second, 'user') || isWord(second, 'database'))) return 'persistent';
      return undefined;
    }
    case 'copy':
      return statement.some((token) => isWord(token, 'stdin')) ? 'copyIn' : undefined;
    case 'do':
      return examineBodies(statement);
    case 'create': {
      let next = 1;
      if (isWord(statement[next], 'or') && isWord(statement[next + 1], 'replace')) next += 2;
      return isWord(statement[next], 'function') || isWord(statement[next], 'procedure') ? examineBodies(statement) : undefined;
    }
    default:
      // In a body, `execute` and the rest were refused wherever they stand.
      return inBody ? undefined : sessionStatements[first.text];
  }
}

/** SET [SESSION] ROLE, SET SESSION AUTHORIZATION, RESET ROLE, RESET SESSION AUTHORIZATION. */
function changesRole(statement: Token[]): boolean {
  const [, second, third] = statement;
  return isWord(second, 'role') || (isWord(second, 'session') && (isWord(third, 'role') || isWord(third, 'authorization')));
}

/** Whether the token at `index` is in a CREATE FUNCTION or CREATE PROCEDURE statement. */
function inFunctionDefinition(tokens: Token[], index: number): boolean {
  let start = index;
  while (start > 0 && !isSymbol(tokens[start - 1], ';')) start -= 1;
  let next = start + 1;
  if (!isWord(tokens[start], 'create')) return false;
  if (isWord(tokens[next], 'or') && isWord(tokens[next + 1], 'replace')) next += 2;
  return isWord(tokens[next], 'function') || isWord(tokens[next], 'procedure');
}

/** The quoted parts of a DO block or CREATE FUNCTION are code that runs later: read as such. */
function examineBodies(statement: Token[]): RefusalKind | undefined {
  for (const token of statement) {
    if (token.kind !== 'string') continue;
    const found = examine(tokenize(token.text), true);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** `set_config(a, b, true)`: exactly three arguments, the third the word true. */
function isLocalSetConfig(tokens: Token[], index: number): boolean {
  if (!isSymbol(tokens[index + 1], '(')) return false;
  const argumentsFound: Token[][] = [[]];
  let depth = 0;
  for (let at = index + 2; at < tokens.length; at += 1) {
    const token = tokens[at]!;
    if (isSymbol(token, '(') || isSymbol(token, '[')) depth += 1;
    else if (isSymbol(token, ')') || isSymbol(token, ']')) {
      if (depth === 0) {
        const third = argumentsFound[2];
        return argumentsFound.length === 3 && third!.length === 1 && isWord(third![0], 'true');
      }
      depth -= 1;
    } else if (depth === 0 && isSymbol(token, ',')) {
      argumentsFound.push([]);
      continue;
    }
    argumentsFound[argumentsFound.length - 1]!.push(token);
  }
  return false;
}

function isWord(token: Token | undefined, text: string): boolean {
  return token?.kind === 'word' && token.text === text;
}

function isSymbol(token: Token | undefined, text: string): boolean {
  return token?.kind === 'symbol' && token.text === text;
}

const wordStart = /[A-Za-z_\u0080-\uffff]/;
const wordPart = /[A-Za-z0-9_$\u0080-\uffff]/;

/**
 * Postgres's tokens, as far as telling statements apart needs: unquoted words
 * (lower-cased), quoted names, string contents (plain, escape, dollar-quoted),
 * and single-character symbols. An unterminated quote or comment runs to the
 * end, as the database would refuse it anyway.
 */
function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  const length = sql.length;
  while (at < length) {
    const char = sql[at]!;
    const next = sql[at + 1];
    if (/\s/.test(char)) {
      at += 1;
    } else if (char === '-' && next === '-') {
      const end = sql.indexOf('\n', at);
      at = end === -1 ? length : end + 1;
    } else if (char === '/' && next === '*') {
      // Block comments nest in Postgres.
      let depth = 1;
      at += 2;
      while (at < length && depth > 0) {
        if (sql[at] === '/' && sql[at + 1] === '*') {
          depth += 1;
          at += 2;
        } else if (sql[at] === '*' && sql[at + 1] === '/') {
          depth -= 1;
          at += 2;
        } else at += 1;
      }
    } else if (char === "'") {
      const [text, end] = quoted(sql, at, "'", false);
      tokens.push({ kind: 'string', text });
      at = end;
    } else if (char === '"') {
      const [text, end] = quoted(sql, at, '"', false);
      tokens.push({ kind: 'name', text });
      at = end;
    } else if (char === '$' && next !== undefined && /[0-9]/.test(next)) {
      // A parameter, $1.
      at += 1;
      while (at < length && /[0-9]/.test(sql[at]!)) at += 1;
      tokens.push({ kind: 'symbol', text: '$' });
    } else if (char === '$') {
      const tag = /^\$([A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/.exec(sql.slice(at));
      if (tag === null) {
        tokens.push({ kind: 'symbol', text: '$' });
        at += 1;
        continue;
      }
      const bodyStart = at + tag[0].length;
      const close = sql.indexOf(tag[0], bodyStart);
      const end = close === -1 ? length : close;
      tokens.push({ kind: 'string', text: sql.slice(bodyStart, end) });
      at = close === -1 ? length : close + tag[0].length;
    } else if (wordStart.test(char)) {
      let end = at + 1;
      while (end < length && wordPart.test(sql[end]!)) end += 1;
      const word = sql.slice(at, end);
      // E'…' is an escape string: a backslash escapes the next character, the quote included.
      if ((word === 'e' || word === 'E') && sql[end] === "'") {
        const [text, after] = quoted(sql, end, "'", true);
        tokens.push({ kind: 'string', text });
        at = after;
        continue;
      }
      tokens.push({ kind: 'word', text: word.toLowerCase() });
      at = end;
    } else if (/[0-9]/.test(char)) {
      let end = at + 1;
      while (end < length && /[0-9A-Za-z_.]/.test(sql[end]!)) end += 1;
      tokens.push({ kind: 'symbol', text: '0' });
      at = end;
    } else {
      tokens.push({ kind: 'symbol', text: char });
      at += 1;
    }
  }
  return tokens;
}

/** The contents of a quoted string or name starting at `start`, and where it ends; doubled quotes stand for one. */
function quoted(sql: string, start: number, quote: string, backslashes: boolean): [string, number] {
  let text = '';
  let at = start + 1;
  while (at < sql.length) {
    const char = sql[at]!;
    if (backslashes && char === '\\') {
      text += sql[at + 1] ?? '';
      at += 2;
    } else if (char === quote) {
      if (sql[at + 1] === quote) {
        text += quote;
        at += 2;
      } else return [text, at + 1];
    } else {
      text += char;
      at += 1;
    }
  }
  return [text, sql.length];
}
