import type { Logger } from '@roster/config';
import type { Database, Scope } from '@roster/db';
import { RosterError } from '@roster/errors';
import { type Memory, type SearchRead, type SearchResult } from '@roster/memory';
import { runInTurn, type TurnContext } from './context.js';
import { historyExpression, historyFromJson } from './conversation-store.js';
import type { Agent, Directory } from './directory.js';
import type { Engine, EngineFile, EnginePart, EngineToolCall } from '@roster/contracts';
import { cannotReadFiles, unreadKinds } from './files.js';
import type { LearningEventStore } from './learning-event-store.js';
import { historyMessages, memoryBlock, systemPrefix, type StoredMessage } from './prompt.js';
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

/**
 * One agent's turn. `files` (the message's images, voice notes, documents)
 * go to its engine with this message only, when the engine reads their kinds;
 * otherwise the agent answers plainly that it cannot read them, and its
 * engine is not called.
 */
export type RunAgent = (
  agent: Agent,
  context: TurnContext,
  text: string,
  kind: 'dm' | 'group',
  turn: TurnOptions,
  withColleagues: boolean,
  files?: readonly EngineFile[],
) => Promise<AgentAnswer>;

/**
 * Prompt assembly and one agent's engine call: its active lessons, the facts
 * its scope retrieves, its history in scope, and the tools it may use, with
 * the tool host that carries the tools' effects (memory, feedback, lesson
 * proposals, a colleague's answer).
 */
export function createAgentRunner(options: AgentRunnerOptions): RunAgent {
  const { database, memory, directory, learning, historyTokens, memoryTokens, log } = options;

  /**
   * Everything an agent's prompt reads, in one statement in its own scope:
   * its active lessons, the facts the message finds (memory's one search
   * statement), and its history (only a person's turn has one). Row-level
   * security decides what each part sees.
   */
  async function readPrompt(
    scope: Scope,
    options: { query: string; readsBelowFloor: boolean; agentName: string; history: { conversationId: string; beforeMessageId: string } | null },
  ): Promise<{ lessons: string[]; facts: SearchResult[]; history: StoredMessage[] }> {
    let search: SearchRead | null = null;
    if (options.query !== '') {
      try {
        search = await memory.prepareSearch(scope, options.query, { limit: 8, tokenBudget: memoryTokens, includeIrrelevant: options.readsBelowFloor });
      } catch (error) {
        log?.warn({ err: error, agent: options.agentName }, 'memory search failed; answering without it');
      }
    }
    return database.withScope(
      scope,
      async (tx) => {
        await search?.prepare(tx);
        const params: unknown[] = [];
        const searched = search === null ? null : search.expression(1);
        if (searched !== null) params.push(...searched.params);
        const historyColumn = options.history === null ? `'[]'::jsonb` : historyExpression(params.length + 1);
        if (options.history !== null) params.push(options.history.conversationId, options.history.beforeMessageId, 40);
        const { rows } = await tx.query<{ search: unknown; lessons: string[] | null; history: unknown }>(
          `select ${searched === null ? 'null::jsonb' : searched.sql} as search,
                  (select jsonb_agg(l.text order by l.approved_at, l.id) from lessons l where l.status = 'active') as lessons,
                  ${historyColumn} as history`,
          params,
        );
        const row = rows[0]!;
        return { lessons: row.lessons ?? [], facts: search === null ? [] : search.finish(row.search), history: historyFromJson(row.history) };
      },
      search?.settings === undefined ? undefined : { settings: search.settings },
    );
  }

  async function runAgent(
    agent: Agent,
    context: TurnContext,
    text: string,
    kind: 'dm' | 'group',
    turn: TurnOptions,
    withColleagues: boolean,
    files: readonly EngineFile[] = [],
    /** What memory is searched for: the message, or a colleague's question without "X asks:". */
    query: string = text,
  ): Promise<AgentAnswer> {
    const engine = options.engineFor(agent);
    const unread = unreadKinds(engine, files);
    if (unread.length > 0) return { text: cannotReadFiles(unread, text !== ''), toolCalls: [], memories: [] };
    const scope = context.scope;
    const read =
      scope === null
        ? { lessons: [], facts: [], history: [] }
        : await readPrompt(scope, {
            query,
            readsBelowFloor: engine.readsBelowFloor === true,
            agentName: agent.name,
            history: context.depth === 0 && scope.conversationId !== undefined && scope.conversationId !== null ? { conversationId: scope.conversationId, beforeMessageId: context.messageId } : null,
          }).catch((error: unknown) => {
            if (RosterError.isInstance(error)) throw error;
            // People read one plain sentence; what failed (a damaged page's file path, say) stays in the cause, for the operator's log.
            throw new RosterError('prompt_read_failed', "reading its memory failed inside Roster and nothing was answered; the operator's log has the detail.", { cause: error });
          });
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
      const answer = await runAgent(colleague, colleagueContext, `${context.agent.name} asks: ${question}`, 'dm', {}, false, [], question);
      return { agent: colleague.name, answer: answer.text };
    },
  };

  return runAgent;
}
