export {
  EmbedderError,
  normalizeVector,
  type Embedder,
  type EmbedderErrorOptions,
  type EmbedOptions,
} from './embedder.js';
export { createHashingEmbedder, type HashingEmbedderOptions } from './hashing-embedder.js';
export {
  createOllamaEmbedder,
  createOpenAICompatibleEmbedder,
  createOpenAIEmbedder,
  parseEmbedderReference,
  type EmbedderKeys,
  type FetchFunction,
  type OllamaEmbedderOptions,
  type OpenAICompatibleEmbedderOptions,
  type OpenAIEmbedderOptions,
} from './ai-sdk-embedders.js';
