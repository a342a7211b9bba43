export { createAiSdkEngine, type AiSdkEngineOptions } from './ai-sdk-engine.js';
export { createOfflineEngine, type OfflineEngineOptions } from './offline-engine.js';
export { createEngine, type EngineReferenceOptions } from './references.js';
export { checkModelReference, type ModelCheck, type ModelCheckConfig } from './check.js';
