/**
 * The web page: what it weighs on the wire and how long its first load takes.
 *
 * Weight: every file of the built bundle (apps/web/dist/public), raw, gzip
 * (level 6, what a compressing proxy sends) and brotli.
 *
 * First load: the real server on an embedded database, the page in Debian's
 * Chromium through playwright-core, each load in a new browser context (an
 * empty cache, as a first visit): from navigation start to the shell's
 * DOMContentLoaded and load, and to the moment the agents page shows its list
 * (which needs /api/me, /api/agents and /api/engines answered).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { publicDirectory } from '@roster/web';
import { chromium } from 'playwright-core';
import { startWebRoster } from '../support/web-roster.js';
import { progress, type BenchmarkReport, type ResultTable } from './report.js';

export const title = 'Web page: weight and first load';

/** The little of the browser's globals the measurement reads. */
interface InPage {
  document: { querySelector(selector: string): unknown };
  performance: { getEntriesByType(type: 'navigation'): Array<{ responseEnd: number; domContentLoadedEventEnd: number; loadEventEnd: number }> };
}

function files(directory: string): string[] {
  return fs.readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    return entry.isDirectory() ? files(full) : [full];
  });
}

function kilobytes(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KiB`;
}

function percentile(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? Number.NaN;
}

export function pageWeight(): { table: ResultTable; script: { raw: number; gzip: number }; style: { raw: number; gzip: number } } {
  if (!fs.existsSync(path.join(publicDirectory, 'index.html'))) throw new Error(`The page is not built (${publicDirectory}): run npm run build first.`);
  const rows: string[][] = [];
  const totals = { script: { raw: 0, gzip: 0 }, style: { raw: 0, gzip: 0 } };
  let all = { raw: 0, gzip: 0, brotli: 0 };
  for (const file of files(publicDirectory).sort()) {
    const content = fs.readFileSync(file);
    const gzip = zlib.gzipSync(content, { level: 6 }).length;
    const brotli = zlib.brotliCompressSync(content).length;
    rows.push([path.relative(publicDirectory, file), kilobytes(content.length), kilobytes(gzip), kilobytes(brotli)]);
    all = { raw: all.raw + content.length, gzip: all.gzip + gzip, brotli: all.brotli + brotli };
    const kind = file.endsWith('.js') ? totals.script : file.endsWith('.css') ? totals.style : null;
    if (kind !== null) {
      kind.raw += content.length;
      kind.gzip += gzip;
    }
  }
  rows.push(['all', kilobytes(all.raw), kilobytes(all.gzip), kilobytes(all.brotli)]);
  return { table: { title: 'Built page (apps/web/dist/public)', columns: ['file', 'raw', 'gzip', 'brotli'], rows }, ...totals };
}

export async function run(args: readonly string[]): Promise<BenchmarkReport> {
  const loads = Number(args.find((arg) => arg.startsWith('--loads='))?.slice('--loads='.length) ?? 20);
  const weight = pageWeight();
  progress(`page: ${loads} first loads`);
  const loadBefore = os.loadavg()[0]!;
  const roster = await startWebRoster();
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const measured = { responseEnd: [] as number[], domContentLoaded: [] as number[], load: [] as number[], agentsShown: [] as number[] };
  try {
    await roster.addAgent('Scout', 'plans trips');
    const cookie = await roster.sessionCookie();
    for (let index = 0; index < loads + 1; index += 1) {
      const context = await browser.newContext();
      await context.addCookies([{ name: cookie.name, value: cookie.value, url: roster.address }]);
      const page = await context.newPage();
      await page.goto(`${roster.address}/agents`, { waitUntil: 'load' });
      // Read in the page, checked at every frame: milliseconds since the navigation started.
      // These functions run in the page (as functions: its Content-Security-Policy forbids evaluating text), whose DOM types this Node program does not load.
      const shown = await (
        await page.waitForFunction(
          () => (globalThis as unknown as InPage).document.querySelector('li.card[data-agent="Scout"]') !== null && performance.now(),
          undefined,
          { polling: 'raf' },
        )
      ).jsonValue();
      const timing = await page.evaluate(() => {
        const [entry] = (globalThis as unknown as InPage).performance.getEntriesByType('navigation');
        return { responseEnd: entry?.responseEnd ?? Number.NaN, domContentLoaded: entry?.domContentLoadedEventEnd ?? Number.NaN, load: entry?.loadEventEnd ?? Number.NaN };
      });
      await context.close();
      // The first load warms the server's own caches (file system, PGlite): it is not counted.
      if (index === 0) continue;
      measured.responseEnd.push(timing.responseEnd);
      measured.domContentLoaded.push(timing.domContentLoaded);
      measured.load.push(timing.load);
      measured.agentsShown.push(Number(shown));
    }
  } finally {
    await browser.close();
    await roster.cleanup();
  }
  const row = (name: string, values: number[]) => [name, `${percentile(values, 0.5).toFixed(0)} ms`, `${percentile(values, 0.95).toFixed(0)} ms`];
  return {
    notes: [
      'Weight: the built files as served; gzip at level 6. First load: each load in a new browser context (no cache, a session cookie already set), on loopback; times are the page’s own clock from the start of navigation (Navigation Timing; the list checked at every frame). The first load is a warm-up and is not counted.',
    ],
    tables: [
      weight.table,
      {
        title: `First load of /agents (${loads} loads)`,
        columns: ['until', 'p50', 'p95'],
        rows: [
          row('shell received', measured.responseEnd),
          row('DOMContentLoaded', measured.domContentLoaded),
          row('load', measured.load),
          row('agent list shown', measured.agentsShown),
        ],
      },
    ],
    findings: [
      `JavaScript and CSS together weigh ${kilobytes(weight.script.gzip + weight.style.gzip)} gzipped (${kilobytes(weight.script.gzip)} of script, ${kilobytes(weight.style.gzip)} of style).`,
      `The machine's load average was ${loadBefore.toFixed(1)} when the loads began (${os.cpus().length} cores): on a busy machine the browser's own work (starting a renderer, parsing, painting) dominates, not the bytes or the server.`,
    ],
  };
}
