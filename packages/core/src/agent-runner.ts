import type { Logger } from '@roster/config';
import type { Database, Scope, ScopedTransaction } from '@roster/db';
import { RosterError } from '@roster/errors';
import { type Memory, type SearchRead, type SearchResult } from '@roster/memory';
import { runInTurn, type TurnContext } from './context.js';
import type { Agent, Directory } from './directory.js';
import type { Engine, EngineFile, EnginePart, EngineToolCall } from '@roster/contracts';
import { cannotReadFiles, unreadKinds } from './files.js';
import type { LearningEventStore } from './learning-event-store.js';
import { historyExpression, historyFromJson, historyMessages, memoryBlock, systemPrefix, type StoredMessage } from './prompt.js';
import { memoryTools, type ToolHost } from './tools.js';
import type { TurnOptions } from './types.js';

/** What a colleague may use inside `ask_agent`: reading, never writing. */
const readOnlyTools: ReadonlySet<string> = new Set(['recall']);

export interface AgentRunnerOptions {
  database: Database;
  memory: Memory;
  directory: Directory;
  learning: LearningEventStore;
  engineFor: (agent: Agent) => Engine;
  historyTokens: number;
  memoryTokens: number;
  log?: Logger;
}

/** One agent's answer: its text, the tools it called, and the facts its prompt carried. */
export interface AgentAnswer {
  text: string;
  toolCalls: EngineToolCall[];
  memories: SearchResult[];
}

/** What an agent's prompt reads from the database. */
export interface PromptParts {
  lessons: string[];
  facts: SearchResult[];
  history: StoredMessage[];
}

/** An agent's prompt read, made ready before the transaction it runs in: the settings its scope opens with, and the read. */
interface PromptRead {
  readonly settings: Record<string, string> | undefined;
  read(tx: ScopedTransaction): Promise<PromptParts>;
}

interface PromptOptions {
  query: string;
  /** The query's vector, computed before the transaction (a local embedder's). */
  queryVector?: number[] | null;
  readsBelowFloor: boolean;
  agentName: string;
  history: { conversationId: string; beforeMessageId: string } | null;
}

/** Runs agents' turns, and makes an agent's prompt read ready for a transaction the caller opens. */
export interface AgentRunner {
  run: RunAgent;
  /**
   * The prompt read of a person's turn (depth 0) for an agent in `scope`,
   * answering the stored message `messageId`, to run in the caller's
   * transaction once it has entered the scope. Nothing here touches the
   * database.
   */
  preparePrompt(agent: Agent, scope: Scope, messageId: string, text: string, queryVector: number[] | null): Promise<PromptRead>;
}

/**
 * One agent's turn. `files` (the message's images, voice notes, documents)
 * go to its engine with this message only, when the engine reads their kinds;
 * otherwise the agent answers plainly that it cannot read them, and its
 * engine is not called. `prompt`: what the prompt reads, when the caller
 * read it already (in the transaction that stored the message).
 */
type RunAgent = (
  agent: Agent,
  context: TurnContext,
  text: string,
  kind: 'dm' | 'group',
  turn: TurnOptions,
  withColleagues: boolean,
  extra?: { files?: readonly EngineFile[]; prompt?: PromptParts },
) => Promise<AgentAnswer>;

/**
 * Prompt assembly and one agent's engine call: its active lessons, the facts
 * its scope retrieves, its history in scope, and the tools it may use, with
 * the tool host that carries the tools' effects (memory, feedback, lesson
 * proposals, a colleague's answer).
 */
export function createAgentRunner(options: AgentRunnerOptions): AgentRunner {
  const { database, memory, directory, learning, historyTokens, memoryTokens, log } = options;

  /**
   * Everything an agent's prompt reads, made ready before its transaction:
   * its active lessons, the facts the message finds (memory's one search
   * statement) and its history (only a person's turn has one), read in one
   * statement in its own scope, where row-level security decides what each
   * part sees. `settings` are what that scope opens with (a graph search's).
   */
  async function preparePrompt(scope: Scope, options: PromptOptions): Promise<PromptRead> {
    let search: SearchRead | null = null;
    if (options.query !== '') {
      try {
        search = await memory.prepareSearch(scope, options.query, {
          limit: 8,
          tokenBudget: memoryTokens,
          includeIrrelevant: options.readsBelowFloor,
          ...(options.queryVector === undefined ? {} : { queryVector: options.queryVector }),
        });
      } catch (error) {
        log?.warn({ err: error, agent: options.agentName }, 'memory search failed; answering without it');
      }
    }
    return {
      settings: search?.settings,
      async read(tx) {
        try {
          await search?.prepare(tx);
          const params: unknown[] = [];
          const searched = search === null ? null : search.source(1);
          if (searched !== null) params.push(...searched.params);
          const historyColumn = options.history === null ? `'[]'::jsonb` : historyExpression(params.length + 1);
          if (options.history !== null) params.push(options.history.conversationId, options.history.beforeMessageId, 40);
          const { rows } = await tx.query<{ search: unknown; vectors: unknown; lessons: string[] | null; history: unknown }>(
            `select s.search, s.vectors,
                    (select jsonb_agg(l.text order by l.approved_at, l.id) from lessons l where l.status = 'active') as lessons,
                    ${historyColumn} as history
             from ${searched === null ? '(select null::json as search, null::json as vectors)' : searched.sql} s`,
            params,
          );
          const row = rows[0]!;
          return { lessons: row.lessons ?? [], facts: search === null ? [] : search.finish(row), history: historyFromJson(row.history) };
        } catch (error) {
          if (RosterError.isInstance(error)) throw error;
          // People read one plain sentence; what failed (a damaged page's file path, say) stays in the cause, for the operator's log.
          throw new RosterError('prompt_read_failed', "reading its memory failed inside Roster and nothing was answered; the operator's log has the detail.", { cause: error });
        }
      },
    };
  }

  /** An agent's prompt read in a transaction of its own. */
  async function readPrompt(scope: Scope, options: PromptOptions): Promise<PromptParts> {
    const prepared = await preparePrompt(scope, options);
    return database.withScope(scope, (tx) => prepared.read(tx), prepared.settings === undefined ? undefined : { settings: prepared.settings });
  }

  /** The history a person's turn (depth 0) reads in `scope`: its conversation's, before the message it answers. */
  const historyOf = (scope: Scope, messageId: string, depth: number) =>
    depth === 0 && scope.conversationId !== undefined && scope.conversationId !== null ? { conversationId: scope.conversationId, beforeMessageId: messageId } : null;

  async function runAgent(
    agent: Agent,
    context: TurnContext,
    text: string,
    kind: 'dm' | 'group',
    turn: TurnOptions,
    withColleagues: boolean,
    extra: { files?: readonly EngineFile[]; prompt?: PromptParts } = {},
    /** What memory is searched for: the message, or a colleague's question without "X asks:". */
    query: string = text,
  ): Promise<AgentAnswer> {
    const engine = options.engineFor(agent);
    const files = extra.files ?? [];
    const unread = unreadKinds(engine, files);
    if (unread.length > 0) return { text: cannotReadFiles(unread, text !== ''), toolCalls: [], memories: [] };
    const scope = context.scope;
    const read =
      scope === null
        ? { lessons: [], facts: [], history: [] }
        : (extra.prompt ?? (await readPrompt(scope, { query, readsBelowFloor: engine.readsBelowFloor === true, agentName: agent.name, history: historyOf(scope, context.messageId, context.depth) })));
    const { lessons, facts } = read;
    const history = historyMessages(read.history, agent.id, historyTokens);
    // A colleague answers from what it knows and changes nothing: read-only tools.
    const tools = scope === null ? [] : memoryTools(host).filter((tool) => (context.depth === 0 ? withColleagues || tool.name !== 'ask_agent' : readOnlyTools.has(tool.name)));
    const result = await runInTurn(engine.readsBelowFloor === true ? { ...context, readsBelowFloor: true } : context, () =>
      engine.run({
        system: systemPrefix(agent, lessons, tools.length > 0),
        memory: memoryBlock({ person: context.person, channel: context.channel, kind, facts }),
        history,
        message: text,
        ...(files.length === 0 ? {} : { files }),
        tools,
        ...(turn.signal === undefined ? {} : { signal: turn.signal }),
        ...(turn.onPart === undefined ? {} : { onPart: (part: EnginePart) => turn.onPart?.(agent.name, part) }),
      }),
    );
    return { text: result.text, toolCalls: result.toolCalls, memories: facts };
  }

  const host: ToolHost = {
    memory,
    async recordFeedback(context, rating, comment) {
      await learning.recordFeedback(context.scope!, { messageId: context.messageId, rating, comment, channel: context.channel });
    },
    async proposeLesson(context, text, evidence) {
      return learning.proposeLesson(context.scope!, { agent: context.agent, messageId: context.messageId, text, evidence });
    },
    async askColleague(context, colleagueName, question) {
      if (context.depth > 0) throw new RosterError('colleague_depth', 'A colleague cannot ask another colleague in turn.');
      const colleague = await directory.agentByName(colleagueName);
      if (colleague.id === context.agent.id) throw new RosterError('colleague_self', 'Ask another agent, not yourself.');
      if (colleague.status !== 'active') throw new RosterError('agent_archived', `${colleague.name} is archived.`);
      // The colleague answers in its own scope, agent-wide knowledge only: no person, no private facts.
      const colleagueContext: TurnContext = {
        ...context,
        agent: colleague,
        scope: { agentId: colleague.id, personId: null, audience: 'agent' },
        person: null,
        explicitRemember: false,
        depth: 1,
        forgotten: context.forgotten,
      };
      const answer = await runAgent(colleague, colleagueContext, `${context.agent.name} asks: ${question}`, 'dm', {}, false, {}, question);
      return { agent: colleague.name, answer: answer.text };
    },
  };

  return {
    run: runAgent,
    async preparePrompt(agent, scope, messageId, text, queryVector) {
      const engine = options.engineFor(agent);
      return preparePrompt(scope, { query: text, queryVector, readsBelowFloor: engine.readsBelowFloor === true, agentName: agent.name, history: historyOf(scope, messageId, 0) });
    },
  };
}
