export { createHashingEmbedder, type HashingEmbedderOptions } from './hashing-embedder.js';
