/**
 * What a benchmark hands back, and how it is shown: a plain-text table on the
 * terminal, and a markdown section of docs/benchmarks.md that each run
 * replaces between its markers.
 */
import fs from 'node:fs';
import os from 'node:os';

/** One table of results; every row has one cell per column. */
export interface ResultTable {
  title: string;
  columns: string[];
  rows: string[][];
}

export interface BenchmarkReport {
  /**
   * The section of docs/benchmarks.md it replaces, when not the benchmark's
   * own: a focused run (such as `retrieval --statistics`) writes beside the
   * full run's tables instead of over them.
   */
  section?: { name: string; title: string };
  /** Markdown paragraphs printed above the tables: what was measured and how to read it. */
  notes: string[];
  tables: ResultTable[];
  /** Markdown paragraphs printed below the tables: verdicts and surprises. */
  findings: string[];
}

/** A benchmark module: `tests/bench/<name>.ts` exports these two. */
export interface Benchmark {
  /** The heading of its section in docs/benchmarks.md. */
  title: string;
  run(args: readonly string[]): Promise<BenchmarkReport>;
}

/** Progress goes to stderr, so that stdout holds only the results. */
export function progress(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

export function describeMachine(): string {
  const cpus = os.cpus();
  const model = cpus[0]?.model.trim() ?? 'unknown CPU';
  return `${model}, ${cpus.length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.platform()} ${os.release()}, Node ${process.version}`;
}

export function renderTextTable(table: ResultTable): string {
  const widths = table.columns.map((column, index) => Math.max(column.length, ...table.rows.map((row) => (row[index] ?? '').length)));
  const line = (cells: readonly string[]) => cells.map((cell, index) => cell.padEnd(widths[index]!)).join('  ').trimEnd();
  return [table.title, line(table.columns), widths.map((width) => '-'.repeat(width)).join('  '), ...table.rows.map(line)].join('\n');
}

function renderMarkdownTable(table: ResultTable): string {
  const escape = (cell: string) => cell.replaceAll('|', '\\|');
  const line = (cells: readonly string[]) => `| ${cells.map(escape).join(' | ')} |`;
  return [`**${table.title}**`, '', line(table.columns), line(table.columns.map(() => '---')), ...table.rows.map(line)].join('\n');
}

export interface SectionHeader {
  title: string;
  date: Date;
  machine: string;
  /** The commit measured. */
  revision: string;
  seconds: number;
  command: string;
}

export function renderSection(header: SectionHeader, report: BenchmarkReport): string {
  const stamp =
    `Last run ${header.date.toISOString().slice(0, 16).replace('T', ' ')} UTC at ${header.revision}, on ${header.machine}; ` +
    `\`${header.command}\` took ${formatDuration(header.seconds)}.`;
  return [
    `## ${header.title}`,
    `_${stamp}_`,
    ...report.notes,
    ...report.tables.map(renderMarkdownTable),
    ...report.findings,
  ].join('\n\n');
}

export function formatDuration(seconds: number): string {
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes} min ${Math.round(seconds - minutes * 60)} s`;
}

const defaultDocument = `# Benchmarks\n\nSections below are written by \`npm run bench -- <name>\`.\n`;

/**
 * Replace the text between `<!-- bench:name -->` and `<!-- /bench:name -->`
 * in the document, or append the section when it has none yet. Everything
 * outside the markers is left as it was.
 */
export function writeSection(documentPath: string, name: string, body: string): void {
  const document = fs.existsSync(documentPath) ? fs.readFileSync(documentPath, 'utf8') : defaultDocument;
  const open = `<!-- bench:${name} -->`;
  const close = `<!-- /bench:${name} -->`;
  const section = `${open}\n${body.trim()}\n${close}`;
  const start = document.indexOf(open);
  const end = document.indexOf(close);
  const next =
    start >= 0 && end > start
      ? document.slice(0, start) + section + document.slice(end + close.length)
      : `${document.trimEnd()}\n\n${section}\n`;
  fs.writeFileSync(documentPath, next);
}

/** Nearest-rank percentile of a list of numbers (p in 0..100). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function mean(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** Milliseconds with a precision that suits their size. */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return '–';
  return ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : ms.toFixed(0);
}

export function formatRatio(value: number, digits = 3): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '–';
}
