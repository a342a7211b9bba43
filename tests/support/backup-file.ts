import fs from 'node:fs';
import { expect } from 'vitest';
import { runRoster } from './roster-process.js';

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

/**
 * Restore `file` into the empty target of `env` with the tombstones of the
 * newer installation `newer` (its data folder or connection string), as
 * `roster restore --replay-forgets-from` promises: one fact forgotten again,
 * Scout's chain head the backup's, `kept` there and `forgotten` not, the audit
 * verifying against that head, `doctor --deep` clean. Returns doctor's output.
 */
export async function restoreReplayingForgets(
  env: Record<string, string>,
  file: string,
  newer: string,
  head: string,
  facts: { kept: string; forgotten: string },
): Promise<string> {
  const restored = await runRoster(['restore', file, '--replay-forgets-from', newer], env, 120_000);
  expect(restored.code, restored.stderr).toBe(0);
  expect(restored.stdout).toContain('1 tombstone newer than the backup, 1 fact forgotten again');
  expect(restored.stdout).toContain(`Scout  ${head}`);
  const listed = await runRoster(['memory', 'list', '--agent', 'Scout', '--person', 'ada', '--json'], env, 120_000);
  expect(listed.code, listed.stderr).toBe(0);
  const contents = (JSON.parse(listed.stdout) as Array<{ content: string }>).map((fact) => fact.content);
  expect(contents).toContain(facts.kept);
  expect(contents).not.toContain(facts.forgotten);
  const verified = await runRoster(['audit', 'verify', '--agent', 'Scout', '--expect', head], env);
  expect(verified.code, verified.stderr).toBe(0);
  expect(verified.stdout).toMatch(/^Scout\s+ok\s+/);
  const doctor = await runRoster(['doctor', '--deep'], env, 120_000);
  expect(doctor.code, doctor.stdout).toBe(0);
  return doctor.stdout;
}
