export { createOfflineEngine, type OfflineEngineOptions } from './offline-engine.js';
export { createEngine, type EngineReferenceOptions } from './references.js';
export {
  createOllamaEmbedder,
  createOpenAICompatibleEmbedder,
  createOpenAIEmbedder,
  type FetchFunction,
  type OllamaEmbedderOptions,
  type OpenAICompatibleEmbedderOptions,
  type OpenAIEmbedderOptions,
} from './embedders/ai-sdk-embedders.js';
export { checkModelReference, type ModelCheck, type ModelCheckConfig } from './check.js';
