import fs from 'node:fs';
import { expect } from 'vitest';

/** The second line of a backup file: readable without the key, and nobody's words. */
export interface BackupHeader {
  format: string;
  schemaVersion: number;
  database: string;
  takenAt: string;
  tookMs: number;
  sealed: boolean;
  keyFingerprint: string;
  heads: Array<{ agent: string; head: string }>;
}

/** The header of the backup `file`, once its first line says it is one. */
export function readBackupHeader(file: string): BackupHeader {
  const lines = fs.readFileSync(file).subarray(0, 64 * 1024).toString('latin1').split('\n');
  expect(lines[0]).toBe('ROSTER-BACKUP 1');
  return JSON.parse(lines[1]!) as BackupHeader;
}
