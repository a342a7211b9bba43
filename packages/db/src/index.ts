export { createPoolDatabase, type PoolDatabaseOptions, type Database, type ChainHeadRow, type DatabaseInfo, type EnterScope, type QueryResult, type ScopeOptions, type ScopedTransaction, type Transaction } from './database.js';
export { defaultMigrationsDir, loadMigrations, migrate, type Migration, type MigrationReport } from './migrate.js';
export {
  compareVersions,
  embeddedDataDir,
  minimumPgvector,
  openDatabase,
  openEmbeddedDatabase,
  openServerDatabase,
  type OpenDatabaseOptions,
} from './open.js';
export { tablesWithoutContent } from './catalog.js';
export { probeWrites } from './health.js';
export { isConnectionLost } from './transaction.js';
export { assertScope, isUuid, type Scope } from './scope.js';
export { serveEmbeddedDatabase, type ServedDatabase, type ServeOptions } from './serve.js';
export { defaultIdleInTransactionMs } from './password-gate.js';
export { enqueue, outboxBacklog, outboxInsertSql, outboxRows, type EraseJob, type OutboxBacklog, type OutboxJob, type QueuedJob, type WriteAlong } from './outbox.js';
export { backupFormatVersion, openBackupFile, readBackupHeader, writeBackupFile, type BackupBodyKind, type BackupHead, type BackupHeader } from './backup-file.js';
export { checkRestoreTarget, restoreDatabaseImage, takeDatabaseImage } from './backup-image.js';
export { readTombstones, type TombstoneRecord } from './backup-source.js';
