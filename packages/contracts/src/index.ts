export type {
  ApprovalPress,
  ApprovalRequest,
  ChannelAdapter,
  ChannelCapabilities,
  ChannelEvent,
  ChannelStartOptions,
  ChannelTarget,
  SentMessage,
} from './channel-adapter.js';
export {
  defineChannelPlugin,
  type AnyChannelPlugin,
  type BoundRooms,
  type ChannelCheck,
  type ChannelHost,
  type ChannelLink,
  type ChannelLinkState,
  type ChannelLogger,
  type ChannelPlugin,
  type ChannelSetup,
  type ChannelShard,
  type ChannelSources,
  type ChannelWebhook,
  type CredentialField,
  type VariableSpec,
} from './channel-plugin.js';
export type { LinkedDeviceKeyChange, LinkedDeviceSession, LinkedDeviceStatus, LinkedDeviceStore } from './linked-device.js';
export { normalizeVector, type Embedder, type EmbedOptions } from './embedder.js';
export type { Engine, EngineFile, EngineMessage, EnginePart, EngineRequest, EngineResult, EngineTool, EngineToolCall, FileKind } from './engine.js';
export { channelNamePattern, localDoors, maxFileBytes, maxFiles, type Channel, type InboundFile, type InboundMessage } from './inbound.js';
export { flag, optionalSecret, optionalUrl, urlWithProtocols } from './variables.js';
export { secondPerson } from './spoken.js';
export { isJobName, jobNames, payloadSchemas, type JobName, type JobPayload } from './jobs.js';
