/**
 * Writes `durations.json`, each test file's seconds, from a whole run's JSON
 * report, for the sequencer that starts the longest files first:
 *
 *   npx vitest run --reporter=json --outputFile=report.json
 *   npx tsx tests/support/record-durations.ts report.json
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface Report {
  testResults: Array<{ name: string; startTime: number; endTime: number }>;
}

const reportFile = process.argv[2];
if (reportFile === undefined) {
  process.stderr.write('usage: tsx tests/support/record-durations.ts <vitest JSON report>\n');
  process.exit(2);
}
const root = fileURLToPath(new URL('../../', import.meta.url));
const report = JSON.parse(fs.readFileSync(reportFile, 'utf8')) as Report;
const durations = Object.fromEntries(
  report.testResults
    .map((file) => [path.relative(root, file.name).split(path.sep).join('/'), Math.round((file.endTime - file.startTime) / 100) / 10] as const)
    .sort(([, a], [, b]) => b - a),
);
fs.writeFileSync(new URL('./durations.json', import.meta.url), `${JSON.stringify(durations, null, 2)}\n`);
process.stdout.write(`${Object.keys(durations).length} files recorded\n`);
