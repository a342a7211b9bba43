import { createAgentRunner } from './agent-runner.js';
import { ConversationStore } from './conversation-store.js';
import { createDirectory } from './directory.js';
import { createChannelInbox } from './inbox.js';
import { LearningEventStore } from './learning-event-store.js';
import { erasePerson } from './person-erase.js';
import { exportPerson } from './person-export.js';
import { purgeAgent } from './purge.js';
import { createTurnPipeline } from './turn.js';
import type { Core, CoreOptions } from './types.js';

export { maxFileBytes, maxFiles, maxMessageLength, type Core, type CoreOptions, type InboundFile, type InboundMessage, type Reply, type SourceMessage, type TranscriptLine, type MessageFence, type TurnObserver, type TurnOptions, type TurnOutcome, type TurnRecord, type TurnResult } from './types.js';

/**
 * The conversation core, wired: the directory, the stores (conversations and
 * messages, learning events), the agent runner (prompt assembly and engine
 * call) and the turn pipeline. Messages of one conversation are handled in
 * order; different conversations run in parallel.
 */
export function createCore(options: CoreOptions): Core {
  const { database, memory } = options;
  const log = options.logger?.child({ component: 'core' });
  const directory = createDirectory(database);
  const conversations = new ConversationStore(database);
  const learning = new LearningEventStore(database);
  const agents = createAgentRunner({
    database,
    memory,
    directory,
    learning,
    engineFor: options.engineFor,
    historyTokens: options.historyTokens ?? 1500,
    memoryTokens: options.memoryTokens ?? 800,
    ...(log === undefined ? {} : { log }),
  });
  const handleTurn = createTurnPipeline({
    database,
    memory,
    directory,
    conversations,
    learning,
    agents,
    ...(log === undefined ? {} : { log }),
    ...(options.observer === undefined ? {} : { observer: options.observer }),
  });

  const queues = new Map<string, Promise<unknown>>();
  function inOrder<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = queues.get(key) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(fn);
    queues.set(key, next);
    void next
      .finally(() => {
        if (queues.get(key) === next) queues.delete(key);
      })
      .catch(() => undefined);
    return next;
  }

  return {
    directory,
    inbox: createChannelInbox(database),
    purgeAgent: (name, confirmation) => purgeAgent({ database, memory, directory }, name, confirmation),
    exportPerson: (person) => exportPerson({ database, memory, directory }, person),
    erasePerson: (person, confirmation, actor) => erasePerson({ database, memory, directory }, person, confirmation, actor),
    transcript: (input) => conversations.transcript({ ...input, limit: Math.min(Math.max(input.limit ?? 100, 1), 500) }),
    sourceMessages: (input) => conversations.sourceMessages(input),
    async correctFact(scope, factId, content, provenance) {
      const result = await memory.correct(scope, factId, content, provenance);
      // Worded as a person would say it, with what was wrong and what is right: the mirror's probe and judge read it.
      await learning.recordCorrection(scope, { text: `That was wrong: “${result.retracted.content ?? ''}”. It is: ${result.fact.content ?? content}`, channel: provenance.channel });
      return result;
    },
    handle(inbound, turn = {}) {
      return inOrder(`${inbound.channel}:${inbound.conversation.externalId}`, () => handleTurn(inbound, turn));
    },
  };
}
