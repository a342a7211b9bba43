import type { Engine, EnginePart, EngineRequest, EngineResult, EngineTool, EngineToolCall } from '@roster/contracts';
import { RosterError } from '@roster/errors';

export interface OfflineEngineOptions {
  /** The agent it answers for; it introduces itself by this name. */
  agentName: string;
}

/** What the person asked for, read from the message by a fixed rule. */
type Intent =
  | { kind: 'remember'; content: string }
  | { kind: 'recall'; query: string }
  | { kind: 'forget'; query: string }
  | { kind: 'correct'; content: string }
  | { kind: 'update'; content: string };

/** The tools each intent may call; all must be offered, or none is called. */
const toolsOf: Record<Intent['kind'], readonly string[]> = {
  remember: ['remember'],
  recall: ['recall'],
  forget: ['recall', 'forget'],
  correct: ['recall', 'correct', 'remember'],
  update: ['recall', 'update', 'remember'],
};

const rules: ReadonlyArray<{ pattern: RegExp; intent: (text: string) => Intent }> = [
  {
    pattern: /^(?:what do you (?:know|remember) about|cosa sai di|cosa ricordi di)\s+(.+?)\s*\??$/is,
    intent: (query) => ({ kind: 'recall', query }),
  },
  { pattern: /^(?:remember(?:\s+that)?|ricorda(?:\s+che)?)\s+(.+)$/is, intent: (content) => ({ kind: 'remember', content }) },
  { pattern: /^(?:forget(?:\s+that)?|dimentica(?:\s+che)?)\s+(.+)$/is, intent: (query) => ({ kind: 'forget', query }) },
  {
    pattern: /^(?:actually|that['’]s wrong|that is wrong|hai sbagliato)\s*,\s*(.+)$/is,
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
        text =
          `I'm ${agentName}. I run without a language model, so I can only remember, recall, update, correct and forget facts: ` +
          `try "remember that …" or "what do you know about …".`;
      } else if (!toolsOf[intent.kind].every((name) => turn.offers(name))) {
        text = `I'm ${agentName}. I can't keep memories in this conversation.`;
      } else {
        try {
          text = await perform(intent, turn);
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

function readIntent(message: string): Intent | undefined {
  const text = message.trim();
  for (const rule of rules) {
    const match = rule.pattern.exec(text);
    const subject = match?.[1]?.trim();
    if (subject) return rule.intent(subject);
  }
  return undefined;
}

async function perform(intent: Intent, turn: OfflineTurn): Promise<string> {
  switch (intent.kind) {
    case 'remember':
      return remember(intent.content, turn);
    case 'recall': {
      const facts = await recall(intent.query, turn);
      if (facts.length === 0) return `I don't know anything about ${intent.query} yet.`;
      return facts.map((fact) => `- ${fact.content}`).join('\n');
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
      // A correction of nothing stored is news: it is remembered, and no other fact is touched.
      const found = await find(intent.content, turn);
      if (found.length === 0) return `${await remember(intent.content, turn)} (I found nothing like it to ${intent.kind}.)`;
      if (found.length > 1) return whichOne(found);
      await turn.call(intent.kind, { factId: found[0]!.id, content: intent.content, request: intent.content });
      return `${intent.kind === 'correct' ? 'Corrected' : 'Updated'}: ${intent.content}`;
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
  return `Noted: ${content}`;
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
      throw new RosterError('engine_failed', `offline: the ${name} tool failed: ${error instanceof Error ? error.message : String(error)}`, {
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
