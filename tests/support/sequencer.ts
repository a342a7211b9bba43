import fs from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Each test file's seconds in a whole run of the suite (`tests/support/record-durations.ts` writes it). */
const durationsFile = new URL('./durations.json', import.meta.url);

/**
 * The longest files first, by the seconds they took in a recorded run, so
 * that a long file never starts last and leaves one worker running it alone
 * while the other is idle. A file the record does not know yet goes first,
 * as vitest itself does with a file it has no result for. A clean checkout
 * has no results of vitest's own: the record stands in for them.
 */
export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const durations = JSON.parse(fs.readFileSync(durationsFile, 'utf8')) as Record<string, number>;
    const root = this.ctx.config.root;
    const seconds = (file: TestSpecification) => durations[path.relative(root, file.moduleId).split(path.sep).join('/')] ?? Number.POSITIVE_INFINITY;
    return [...files].sort((a, b) => seconds(b) - seconds(a));
  }
}
