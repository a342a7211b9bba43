import type { Engine, EnginePart, EngineRequest, EngineResult, EngineTool, EngineToolCall } from '@roster/contracts';
import { RosterError } from '@roster/errors';
import { secondPerson } from '@roster/contracts';

export interface OfflineEngineOptions {
  /** The agent it answers for; it introduces itself by this name. */
  agentName: string;
}

/** What the person asked for, read from the message by a fixed rule. */
type Intent =
  | { kind: 'remember'; content: string }
  | { kind: 'recall'; query: string }
  | { kind: 'ask'; question: string }
  | { kind: 'forget'; query: string }
  | { kind: 'correct'; content: string }
  | { kind: 'update'; content: string };

/** The tools each intent may call; all must be offered, or none is called. */
const toolsOf: Record<Intent['kind'], readonly string[]> = {
  remember: ['remember'],
  recall: ['recall'],
  ask: ['recall'],
  forget: ['recall', 'forget'],
  correct: ['recall', 'correct', 'remember'],
  update: ['recall', 'update', 'remember'],
};

/** How a correction starts. "No" and "wrong" count only before a statement (see `readIntent`). */
const correctionLeads = [
  'actually',
  'correction',
  "that['’]?s (?:wrong|not right|not true|incorrect)",
  'that is (?:wrong|not right|not true|incorrect)',
  "you['’]re wrong",
  'you are wrong',
  'wrong',
  'no',
  'nope',
  'not quite',
  'sorry',
  'i meant',
  'hai sbagliato',
].join('|');

/** Leads that start many messages that correct nothing ("no worries", "sorry I'm late"): only before a statement. */
const weakLeads = /^(?:no|nope|wrong|sorry|not quite)(?![\p{L}\p{N}])/iu;
/** A statement of a fact: "… is …", "it's …", "I live …". */
const statement = /(?<![\p{L}\p{N}])(?:is|are|was|were|am|live|lives|work|works)(?![\p{L}\p{N}])|['’]s(?![\p{L}\p{N}])/iu;

/** A question: a question word first, or a question mark last. */
const questionForm = /^(?:what|where|when|who|whom|whose|which|how|why|do|does|did|am|is|are|was|were|can|could|tell me|remind me)(?![\p{L}\p{N}])|\?\s*$/iu;
/** About the person ("my", "I") or someone else, not small talk to the agent ("how are you?"). */
const aboutPerson = /(?<![\p{L}\p{N}])(?:my|i|me|mine|our|we|us)(?![\p{L}\p{N}])/iu;
/** "Tell me", "do you remember": how a question is asked, not what it is about, so not searched for. */
const askingLead = /^(?:(?:can|could) you\s+)?(?:tell me|remind me(?:\s+of)?|do you (?:remember|know))\s+/iu;
const toAgent = /(?<![\p{L}\p{N}])(?:you|your)(?![\p{L}\p{N}])/iu;

const rules: ReadonlyArray<{ pattern: RegExp; intent: (text: string) => Intent }> = [
  {
    pattern: /^(?:what do you (?:know|remember) about|cosa sai di|cosa ricordi di)\s+(.+?)\s*\??$/is,
    intent: (query) => ({ kind: 'recall', query }),
  },
  { pattern: /^(?:remember(?:\s+that)?|ricorda(?:\s+che)?)\s+(.+)$/is, intent: (content) => ({ kind: 'remember', content }) },
  { pattern: /^(?:forget(?:\s+that)?|dimentica(?:\s+che)?)\s+(.+)$/is, intent: (query) => ({ kind: 'forget', query }) },
  {
    // A correction in the usual phrasings: "actually, …", "no, it's …", "that's wrong, …", "correction: …".
    pattern: new RegExp(`^(?:${correctionLeads})(?![\\p{L}\\p{N}])[\\s,:;.!—–-]*(.+)$`, 'isu'),
    intent: (content) => ({ kind: 'correct', content }),
  },
  { pattern: /^(?:update|aggiorna)\s*:\s*(.+)$/is, intent: (content) => ({ kind: 'update', content }) },
];

/**
 * The engine that needs no model: a few fixed phrasings, answered by calling
 * the same memory tools a model would, by name. It says plainly what it is.
 */
export function createOfflineEngine(options: OfflineEngineOptions): Engine {
  const { agentName } = options;
  return {
    id: 'offline',
    local: true,
    // Fixed rules over words: it reads no images, sounds or documents.
    accepts: [],
    async run(request: EngineRequest): Promise<EngineResult> {
      const turn = new OfflineTurn(request);
      const intent = readIntent(request.message);
      let text: string;
      if (intent === undefined) {
        text = help(agentName);
      } else if (!toolsOf[intent.kind].every((name) => turn.offers(name))) {
        text = `I'm ${agentName}. I can't keep memories in this conversation.`;
      } else {
        try {
          text = await perform(intent, turn, agentName);
        } catch (error) {
          if (!(error instanceof ToolRefusal)) throw error;
          text = `I couldn't do that: ${error.message}`;
        }
      }
      turn.emit({ type: 'text-delta', text });
      turn.emit({ type: 'turn-end', text });
      return { text, toolCalls: turn.toolCalls };
    },
  };
}

function help(agentName: string): string {
  return (
    `I'm ${agentName}. I run without a language model, so I can remember, recall, update, correct and forget facts, and answer ` +
    `questions from them: try "remember that …", "what is my …?" or "what do you know about …".`
  );
}

function readIntent(message: string): Intent | undefined {
  const text = message.trim();
  for (const rule of rules) {
    const match = rule.pattern.exec(text);
    const subject = match?.[1]?.trim();
    if (!subject) continue;
    const intent = rule.intent(subject);
    // "No worries", "sorry I'm late": a weak lead corrects only a statement.
    if (intent.kind === 'correct' && weakLeads.test(text) && !statement.test(subject)) continue;
    if (intent.kind === 'correct' && questionForm.test(subject) && /\?\s*$/.test(subject)) continue;
    return intent;
  }
  if (questionForm.test(text) && (aboutPerson.test(text) || !toAgent.test(text))) return { kind: 'ask', question: text };
  return undefined;
}

/** The person's words back in the first person: the agent's "your locker" is the fact "my locker". */
function firstPerson(text: string): string {
  const swaps: Record<string, string> = { your: 'my', yours: 'mine', yourself: 'myself', "you're": "I'm", 'you’re': 'I’m' };
  return text.replace(/[\p{L}\p{N}'’]+/gu, (word) => swaps[word.toLowerCase()] ?? word);
}

function sentence(text: string): string {
  const trimmed = text.trim();
  const capital = trimmed.charAt(0).toUpperCase() + trimmed.slice(1);
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}

async function perform(intent: Intent, turn: OfflineTurn, agentName: string): Promise<string> {
  switch (intent.kind) {
    case 'remember':
      return remember(intent.content, turn);
    case 'recall': {
      const facts = await recall(intent.query, turn);
      if (facts.length === 0) return `I don't know anything about ${secondPerson(intent.query)} yet.`;
      return facts.map((fact) => `- ${secondPerson(fact.content)}`).join('\n');
    }
    case 'ask': {
      // Recall returns only what clears the relevance floor, best first: the answer is the best, or nothing.
      const [best] = await recall(intent.question.replace(askingLead, ''), turn);
      if (best !== undefined) return sentence(secondPerson(best.content));
      // About the person: nothing they said answers it. Small talk ("who is around today?"): say what it can do.
      return aboutPerson.test(intent.question) ? "I don't know that." : help(agentName);
    }
    case 'forget': {
      const found = await find(intent.query, turn);
      if (found.length === 0) return 'I found nothing like that to forget.';
      if (found.length > 1) return whichOne(found);
      await turn.call('forget', { factId: found[0]!.id, request: intent.query });
      return 'Forgotten.';
    }
    case 'correct':
    case 'update': {
      const named = intent.kind === 'correct' ? await namedByPronoun(intent.content, turn) : null;
      if (named !== null) {
        if (named.fact === undefined) return 'Which fact do you mean? Say it whole, as in "actually, my … is …"; I changed nothing.';
        await turn.call('correct', { factId: named.fact.id, content: named.content, request: named.content });
        return `Corrected: ${secondPerson(named.content)}`;
      }
      // A correction of nothing stored is news: it is remembered, and no other fact is touched.
      const found = await find(intent.content, turn);
      if (found.length === 0) return `${await remember(intent.content, turn)} (I found nothing like it to ${intent.kind}.)`;
      if (found.length > 1) return whichOne(found);
      await turn.call(intent.kind, { factId: found[0]!.id, content: intent.content, request: intent.content });
      return `${intent.kind === 'correct' ? 'Corrected' : 'Updated'}: ${secondPerson(intent.content)}`;
    }
  }
}

/** Several facts match about equally: the person says which, and nothing changes until then. */
function whichOne(facts: ReadonlyArray<{ content: string }>): string {
  return `Which one: ${facts.map((fact, index) => `${index + 1}. ${fact.content}`).join(' ')}? Say it again in words that fit only one; I changed nothing.`;
}

/**
 * The facts a destructive action may take: only those that match the words
 * (recall with `matching`), and of those the ones too close to the best to
 * tell apart. One fact means act on it; several, ask; none, say so.
 */
async function find(words: string, turn: OfflineTurn): Promise<Array<{ id: string; content: string }>> {
  const output = await turn.call('recall', { query: words, matching: true });
  const facts = isRecord(output) && Array.isArray(output.facts) ? output.facts : [];
  return facts
    .filter(
      (fact): fact is { id: string; content: string; match: { close: boolean } } =>
        isRecord(fact) && typeof fact.id === 'string' && typeof fact.content === 'string' && isRecord(fact.match) && fact.match.close === true,
    )
    .map((fact) => ({ id: fact.id, content: fact.content }));
}

async function remember(content: string, turn: OfflineTurn): Promise<string> {
  await turn.call('remember', { content });
  return `Noted: ${secondPerson(content)}`;
}

/**
 * "No, it's Y" names its fact only by "it": the fact is the one the agent
 * last spoke of (its previous reply, "Your pet name is X"), and the new
 * content is that fact with Y in place of what follows its verb. Null when
 * the correction names its fact in words; `fact` undefined when "it" points
 * at no one fact.
 */
async function namedByPronoun(content: string, turn: OfflineTurn): Promise<{ fact?: { id: string; content: string }; content: string } | null> {
  const pronoun = /^(?:it|that|this)\s*(?:['’]s|is|was)\s+(.+?)[.!]?$/isu.exec(content);
  if (pronoun === null) return null;
  const value = pronoun[1]!.trim();
  const previous = turn.lastReply();
  if (previous === undefined) return { content: value };
  const spoken = firstPerson(previous.replace(/^(?:noted|corrected|updated)\s*:\s*/i, '').replace(/^- /gm, ''));
  const [fact] = await find(spoken, turn);
  const verb = fact === undefined ? null : /^(.*?(?<![\p{L}\p{N}])(?:is|are|was|were)\s+)(.+)$/isu.exec(fact.content);
  if (fact === undefined || verb === null) return { content: value };
  return { fact, content: `${verb[1]}${value}` };
}

async function recall(query: string, turn: OfflineTurn): Promise<Array<{ id: string; content: string }>> {
  const output = await turn.call('recall', { query });
  const facts = isRecord(output) && Array.isArray(output.facts) ? output.facts : [];
  return facts.filter(
    (fact): fact is { id: string; content: string } =>
      isRecord(fact) && typeof fact.id === 'string' && typeof fact.content === 'string',
  );
}

/** A tool answered `{ error }`, or refused its input: the person is told why. */
class ToolRefusal extends Error {}

/** The tools, parts and calls of one turn. */
class OfflineTurn {
  readonly toolCalls: EngineToolCall[] = [];
  private readonly tools: ReadonlyMap<string, EngineTool>;

  constructor(private readonly request: EngineRequest) {
    this.tools = new Map(request.tools.map((tool) => [tool.name, tool]));
  }

  /** The agent's own last reply in the history, if any. */
  lastReply(): string | undefined {
    return [...this.request.history].reverse().find((message) => message.role === 'assistant')?.content;
  }

  offers(name: string): boolean {
    return this.tools.has(name);
  }

  emit(part: EnginePart): void {
    this.request.onPart?.(part);
  }

  /** Calls a tool as a model would: arguments validated by its schema, then executed, recorded and reported. */
  async call(name: string, raw: unknown): Promise<unknown> {
    const tool = this.tools.get(name);
    if (tool === undefined) throw new ToolRefusal(`the ${name} tool is not available`);
    const parsed = tool.inputSchema.safeParse(raw);
    if (!parsed.success) throw new ToolRefusal(parsed.error.issues.map((issue) => issue.message).join('; '));
    const input = parsed.data;
    this.emit({ type: 'tool-call', toolName: name, input });
    let output: unknown;
    try {
      const signal = this.request.signal;
      output = await tool.execute(input, signal === undefined ? {} : { signal });
    } catch (error) {
      if (RosterError.isInstance(error)) throw error;
      // People read one plain sentence; what failed inside (a damaged page's file path, say) stays in the cause, for the operator's log.
      throw new RosterError('engine_failed', `offline: the ${name} tool failed inside Roster and nothing was answered; the operator's log has the detail.`, {
        cause: error,
      });
    }
    this.toolCalls.push({ toolName: name, input, output });
    this.emit({ type: 'tool-result', toolName: name, output });
    if (isRecord(output) && typeof output.error === 'string') throw new ToolRefusal(output.error);
    return output;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
