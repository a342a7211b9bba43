export { currentTurn, runInTurn, type TurnContext } from './context.js';
export { createCore, maxMessageLength, type Core, type CoreOptions, type InboundMessage, type Reply, type TurnOptions, type TurnResult } from './core.js';
export { createDirectory, linkCodeLifetimeMs, maxPendingLinkCodes, type Agent, type Channel, type Directory, type Identity, type Person } from './directory.js';
export * from './engine.js';
export { InvalidInputError, NotFoundError } from './errors.js';
export { readMemoryView, type MemoryView, type MemoryViewOptions } from './memory-view.js';
export { historyMessages, memoryBlock, systemPrefix, type StoredMessage } from './prompt.js';
export { detectSignals, type LearningSignal, type SignalKind } from './signals.js';
export { memoryTools, type ToolHost } from './tools.js';
