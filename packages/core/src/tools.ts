import type { Scope } from '@roster/db';
import { RosterError } from '@roster/errors';
import { closeMatches, type Memory, type Provenance } from '@roster/memory';
import { z } from 'zod';
import { currentTurn, type TurnContext } from './context.js';
import type { EngineTool } from '@roster/contracts';

export interface ToolHost {
  memory: Memory;
  /** Record a learning event under the turn's (agent, person). */
  recordFeedback(context: TurnContext, rating: 'positive' | 'negative', comment: string): Promise<void>;
  /** Create a pending approval with the lesson's full text; never promotes. */
  proposeLesson(context: TurnContext, text: string, evidence: string | undefined): Promise<{ approvalId: string }>;
  /** Ask a colleague, who answers in its own scope from agent-wide knowledge only. */
  askColleague(context: TurnContext, colleague: string, question: string): Promise<{ agent: string; answer: string }>;
}

/** What a tool answers when memory refuses: the model is told, the turn goes on. */
function refusal(error: unknown): { error: string } {
  if (RosterError.isInstance(error)) return { error: error.message };
  throw error;
}

function provenance(context: TurnContext, tool: string): Provenance {
  // The person's explicit "remember …" makes them the author; otherwise the model is.
  const byPerson = context.explicitRemember && context.person !== null && context.depth === 0;
  return {
    actor: byPerson ? { kind: 'person', id: context.person!.id } : { kind: 'agent', id: context.agent.name },
    sourceMessageIds: [context.messageId],
    channel: context.channel,
    tool,
    untrusted: context.untrusted,
    explicit: byPerson,
  };
}

function scoped(context: TurnContext) {
  if (context.scope === null) throw new RosterError('memory_unavailable', 'This conversation has no memory: the sender is not known.');
  return context.scope;
}

/** Keep each tool's input type tied to its schema, then erase it for the engine. */
function defineTool<S extends z.ZodType>(tool: {
  name: string;
  description: string;
  inputSchema: S;
  execute(input: z.output<S>, options: { signal?: AbortSignal }): Promise<unknown>;
}): EngineTool {
  return tool as unknown as EngineTool;
}

const content = z.string().min(1).max(4000);
const factId = z.string().uuid();
/** The person's own words naming the fact: what forget, correct and update must match before they act. */
const request = z.string().min(1).max(1000);

/**
 * Refuse a destructive action on a fact that does not match the person's
 * request, so that no engine (a model that picked the wrong id, a rule that
 * took the first search result) can forget, retract or close an unrelated
 * fact.
 */
async function requireMatch(memory: Memory, scope: Scope, id: string, words: string, action: string): Promise<void> {
  const [match] = await memory.match(scope, words, { factIds: [id] });
  if (match === undefined) {
    throw new RosterError(
      'fact_mismatch',
      `Nothing was ${action}: fact ${id} does not match ${JSON.stringify(words.slice(0, 200))}. Call recall with matching: true to find the facts that do; if none does, tell the person you found nothing like it.`,
    );
  }
}

/**
 * The memory tools. Each handler takes its scope from the turn's context,
 * never from its arguments: a model cannot name another agent or person.
 */
export function memoryTools(host: ToolHost): EngineTool[] {
  return [
    defineTool({
      name: 'remember',
      description: 'Store a fact the person told you, in their own words, so you can use it in later conversations.',
      inputSchema: z.object({ content, category: z.string().regex(/^[a-z][a-z0-9_-]{0,39}$/).optional() }),
      async execute(input) {
        const context = currentTurn();
        try {
          const { fact, created } = await host.memory.remember(scoped(context), {
            content: input.content,
            ...(input.category === undefined ? {} : { category: input.category }),
            provenance: provenance(context, 'remember'),
          });
          return { factId: fact.id, content: fact.content, created };
        } catch (error) {
          return refusal(error);
        }
      },
    }),
    defineTool({
      name: 'recall',
      description:
        'Search what you remember about this person (and what you know generally). Returns the most relevant facts. ' +
        'With matching: true, returns only facts that genuinely match the query (shared words, close meaning), best first, each with why and how strongly, and `close` on those too near the best to tell apart: use it before forget, correct or update.',
      inputSchema: z.object({ query: z.string().min(1).max(1000), limit: z.number().int().min(1).max(20).optional(), matching: z.boolean().optional() }),
      async execute(input) {
        const context = currentTurn();
        try {
          const scope = scoped(context);
          if (input.matching === true) {
            // Looking for the fact to act on is not a use.
            const matches = (await host.memory.match(scope, input.query)).slice(0, input.limit ?? 5);
            const close = new Set(closeMatches(matches).map((match) => match.fact.id));
            return {
              facts: matches.map((match) => ({
                id: match.fact.id,
                content: match.fact.content ?? '',
                trust: match.fact.trust,
                match: { reasons: match.reasons, sharedWords: match.sharedWords, score: Number(match.score.toFixed(3)), close: close.has(match.fact.id) },
              })),
            };
          }
          const results = await host.memory.search(scope, input.query, { limit: input.limit ?? 5, includeIrrelevant: context.readsBelowFloor === true });
          const facts = results.map((result) => ({ id: result.fact.id, content: result.fact.content ?? '', trust: result.fact.trust }));
          // A recall hit is a use; being retrieved into the prompt is not. A turn's own uses are recorded with its reply.
          if (facts.length > 0 && context.uses !== undefined) context.uses.push(...results.map(({ fact }) => ({ id: fact.id, personId: fact.personId })));
          else if (facts.length > 0) await host.memory.recordUse(scope, facts.map((fact) => fact.id), 'recall', { kind: 'agent', id: context.agent.name });
          return { facts };
        } catch (error) {
          return refusal(error);
        }
      },
    }),
    defineTool({
      name: 'correct',
      description:
        'The person says a fact was wrong (never true): replace it with the right one. `request` is the person\'s words about it; a fact that does not match them is refused.',
      inputSchema: z.object({ factId, content, request }),
      async execute(input) {
        const context = currentTurn();
        try {
          await requireMatch(host.memory, scoped(context), input.factId, input.request, 'corrected');
          const { fact } = await host.memory.correct(scoped(context), input.factId, input.content, provenance(context, 'correct'));
          return { factId: fact.id, content: fact.content };
        } catch (error) {
          return refusal(error);
        }
      },
    }),
    defineTool({
      name: 'update',
      description:
        'The person says a fact changed (it was true until now): record the new value and keep the old one as history. `request` is the person\'s words about it; a fact that does not match them is refused.',
      inputSchema: z.object({ factId, content, request }),
      async execute(input) {
        const context = currentTurn();
        try {
          await requireMatch(host.memory, scoped(context), input.factId, input.request, 'updated');
          const { fact } = await host.memory.update(scoped(context), input.factId, input.content, provenance(context, 'update'));
          return { factId: fact.id, content: fact.content };
        } catch (error) {
          return refusal(error);
        }
      },
    }),
    defineTool({
      name: 'forget',
      description:
        'The person wants a fact forgotten: it is erased for good and never learned again unless they say it again. `request` is the person\'s words naming it; a fact that does not match them is refused.',
      inputSchema: z.object({ factId, request }),
      async execute(input) {
        const context = currentTurn();
        try {
          await requireMatch(host.memory, scoped(context), input.factId, input.request, 'forgotten');
          const fact = await host.memory.get(scoped(context), input.factId);
          await host.memory.forget(scoped(context), input.factId, provenance(context, 'forget'));
          context.forgotten.push(fact.content ?? '', input.request);
          return { forgotten: true };
        } catch (error) {
          return refusal(error);
        }
      },
    }),
    defineTool({
      name: 'feedback',
      description: 'Record the person’s rating of your last answer (positive or negative) with their comment.',
      inputSchema: z.object({ rating: z.enum(['positive', 'negative']), comment: z.string().max(2000).default('') }),
      async execute(input) {
        const context = currentTurn();
        scoped(context);
        await host.recordFeedback(context, input.rating, input.comment);
        return { recorded: true };
      },
    }),
    defineTool({
      name: 'propose_lesson',
      description:
        'Propose a rule about your own behaviour for all later conversations. A person must approve its full text before it applies; you cannot approve it.',
      inputSchema: z.object({ text: z.string().min(20).max(4000), evidence: z.string().max(4000).optional() }),
      async execute(input) {
        const context = currentTurn();
        scoped(context);
        const { approvalId } = await host.proposeLesson(context, input.text, input.evidence);
        return { approvalId, status: 'pending', note: 'A person must approve it before it applies.' };
      },
    }),
    defineTool({
      name: 'ask_agent',
      description: 'Ask a colleague agent a question. It answers from its general knowledge only, never from what other people told it.',
      inputSchema: z.object({ agent: z.string().min(1).max(40), question: z.string().min(1).max(4000) }),
      async execute(input) {
        const context = currentTurn();
        try {
          return await host.askColleague(context, input.agent, input.question);
        } catch (error) {
          return refusal(error);
        }
      },
    }),
  ];
}
