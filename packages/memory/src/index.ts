export { createAuditLog, listAuditEvents, type AuditEntry, type AuditLog, type ChainHead, type ChainReport, type HashKind, type MemoryEvent, type VerifyOptions } from './audit.js';
export * from './embedders/index.js';
export { embedFacts, type EmbedFactsOptions, type EmbedFactsReport } from './embed-facts.js';
export { ensureEmbeddingModel, writeEmbedding } from './embeddings.js';
export { FactNotCurrentError, FactNotFoundError, FactStateError, RejectedStatementError, TombstonedError } from './errors.js';
export { renderExport, type ExportFormat } from './export.js';
export { tombstoneMatcher, type TombstoneRow } from './forget.js';
export { erasedPlaces, forgetPlaces, redisPlaces, type ForgetReach } from './forget-places.js';
export { bindInstallationKey } from './installation.js';
export { fade, fadeBatchStatement, protectedCategories, type FadeOptions, type FadeReport } from './fade.js';
export { closeMatches, hashingMatchRule, matchFacts, matchRule, matchTieMargin, type FactMatch, type MatchOptions, type MatchReason, type MatchRule } from './match.js';
export { createMemory, type HistoryEntry, type VersionEvent, type Memory, type MemoryOptions, type RememberInput, type UseReason } from './memory.js';
export { containsSecret, redactSecrets } from './redact.js';
export {
  anyWordQuery,
  defaultVectorWeight,
  hashingVectorWeight,
  neighbourWeight,
  ScopeSizeCache,
  prepareSearch,
  searchFacts,
  type SearchOptions,
  type SearchRead,
} from './search.js';
export { hashingRelevanceFloor, relevanceFloor, type RelevanceFloor } from './relevance.js';
export {
  contentHash,
  estimateJaccard,
  isNearDuplicate,
  keyedContentHash,
  keyedMinhash,
  maxTextLength,
  MemoryInputError,
  minhash,
  normalizeText,
  validateText,
} from './text.js';
export * from './types.js';
export { believedNow, isBelievedNow } from './versions.js';
