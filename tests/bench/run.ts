/**
 * The benchmark dispatcher: `tsx tests/bench/run.ts <name>|all [args…]`
 * (`npm run bench -- <name>` builds the packages first). Each benchmark
 * prints its tables and replaces its own section of docs/benchmarks.md.
 *
 * To add one, write `tests/bench/<name>.ts` exporting `title` and
 * `run(args)` (see `Benchmark` in report.ts) and list it below.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describeMachine, formatDuration, progress, renderSection, renderTextTable, writeSection, type Benchmark } from './report.js';

const benchmarks: Record<string, () => Promise<Benchmark>> = {
  retrieval: () => import('./retrieval.js'),
  locomo: () => import('./locomo.js'),
  jobs: () => import('./jobs.js'),
  relay: () => import('./relay.js'),
  match: () => import('./match.js'),
  'never-said': () => import('./never-said.js'),
  turns: () => import('./turns.js'),
  page: () => import('./page.js'),
  whatsapp: () => import('./whatsapp.js'),
  soak: () => import('./soak.js'),
  scale: () => import('./scale.js'),
  backup: () => import('./backup.js'),
};

const documentPath = fileURLToPath(new URL('../../docs/benchmarks.md', import.meta.url));

/** The commit measured, and whether the code under measurement had uncommitted changes. */
function describeRevision(): string {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const commit = git('rev-parse', '--short', 'HEAD');
    const dirty = git('status', '--porcelain', '--', 'packages', 'migrations') !== '';
    return dirty ? `${commit} with uncommitted changes in packages/ or migrations/` : commit;
  } catch {
    return 'unknown revision';
  }
}

async function main(argv: readonly string[]): Promise<number> {
  const [name, ...args] = argv;
  const names = name === 'all' ? Object.keys(benchmarks) : name !== undefined && name in benchmarks ? [name] : [];
  if (names.length === 0) {
    process.stderr.write(`Usage: npm run bench -- <${[...Object.keys(benchmarks), 'all'].join('|')}> [options]\n`);
    if (name !== undefined) process.stderr.write(`There is no benchmark named ${JSON.stringify(name)}.\n`);
    return 2;
  }
  const machine = describeMachine();
  const revision = describeRevision();
  for (const current of names) {
    const benchmark = await benchmarks[current]!();
    progress(`${current}: starting on ${machine}`);
    const started = performance.now();
    const date = new Date();
    const report = await benchmark.run(args);
    const seconds = (performance.now() - started) / 1000;
    const section = report.section ?? { name: current, title: benchmark.title };
    process.stdout.write(`\n# ${section.title}\n\n${[...report.tables.map(renderTextTable), ...report.findings].join('\n\n')}\n\n`);
    const command = `npm run bench -- ${[current, ...args].join(' ')}`;
    writeSection(documentPath, section.name, renderSection({ title: section.title, date, machine, revision, seconds, command }, report));
    progress(`${current}: done in ${formatDuration(seconds)}; docs/benchmarks.md section "bench:${section.name}" replaced`);
  }
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
