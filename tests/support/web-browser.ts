import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import { startFakeOpenAi } from './fake-openai.js';
import { chromiumLaunch, startWebRoster, type WebRoster } from './web-roster.js';

/**
 * What the browser tests of the web page share: a roster serving the page,
 * one Chromium, the pages' problems and requests, and the steps a person
 * takes (open a page, choose whom to talk to, say something). The bindings
 * below are set by `useWebBrowser`'s beforeAll.
 */

/** Screenshots of every page, kept for a person to look at (gitignored). */
const artifacts = fileURLToPath(new URL('../artifacts/', import.meta.url));

export let roster: WebRoster;
export let browser: Browser;
let fake: Awaited<ReturnType<typeof startFakeOpenAi>>;
/** Every console error and uncaught exception of any page, with the address it happened on. */
export const problems: string[] = [];
/** Every address any watched page asked for: all of them must be the server's own. */
export const requested: string[] = [];

/** Start the roster and the browser before this file's tests, and stop them after. */
export function useWebBrowser(): void {
  beforeAll(async () => {
    fs.mkdirSync(artifacts, { recursive: true });
    // The judge of mirror replays is a language model across the network: a local fake that passes every replay.
    fake = await startFakeOpenAi(() => ({ text: '{"verdict": "pass", "reason": "the reply keeps the correction"}' }));
    roster = await startWebRoster({ ROSTER_JUDGE_ENGINE: fake.engine });
    browser = await chromium.launch(chromiumLaunch);
  }, 120_000);

  beforeEach(() => {
    problems.length = 0;
    requested.length = 0;
  });

  afterAll(async () => {
    await browser?.close();
    await roster?.cleanup();
    await fake?.close();
  });
}

export function watch(page: Page): Page {
  // An answer goes through the whole turn (engine, memory, jobs): on a busy two-core machine that takes more than the 30 s default.
  page.setDefaultTimeout(90_000);
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`${page.url()}: console error: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`${page.url()}: ${error.message}`));
  page.on('request', (request) => requested.push(request.url()));
  return page;
}

/** Nothing a watched page asked for came from elsewhere: no CDN, no font, no tracker (and it did ask: its shell, scripts and API). */
export function expectOwnOriginOnly(): void {
  const own = new URL(roster.address).origin;
  expect(requested.filter((url) => url.startsWith(`${own}/api/`)).length).toBeGreaterThan(0);
  expect(requested.filter((url) => url.startsWith(`${own}/assets/`)).length).toBeGreaterThan(0);
  expect(requested.filter((url) => new URL(url).origin !== own)).toEqual([]);
}

/** A day, counted from today, as a date field takes it. */
export const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toLocaleDateString('en-CA');

export async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: `${artifacts}${name}.png`, fullPage: true });
}

/** Go to a page through the navigation, as a person would. */
export async function open(page: Page, link: string, heading: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: link, exact: true }).click();
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe(heading);
  await page.locator('.loading').first().waitFor({ state: 'detached' });
}

/** Every form control has a name a screen reader says: its label, or an aria-label. */
export async function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll('input, select, textarea')]
      .filter((control) => (control as HTMLInputElement).labels?.length === 0 && !control.hasAttribute('aria-label') && !control.hasAttribute('aria-labelledby'))
      .map((control) => control.outerHTML),
  );
}

/**
 * Choose whom to talk to, and wait for that conversation's page: until it is drawn, the previous
 * one (its log and its message box) is still on screen, and words typed there go nowhere.
 */
export async function talkTo(page: Page, whom: string): Promise<void> {
  await page.getByLabel('Talk to', { exact: true }).selectOption(whom);
  await expect.poll(() => new URL(page.url()).search).toBe(whom === 'team' ? '?team=true' : `?agent=${whom}`);
  await page.getByRole('log', { name: whom === 'team' ? 'Conversation with the whole team' : `Conversation with ${whom}`, exact: true }).waitFor({ state: 'attached' });
}

export async function say(page: Page, words: string): Promise<void> {
  const before = await page.locator('li.turn.theirs').count();
  await page.getByLabel('Message', { exact: true }).fill(words);
  await page.getByLabel('Message', { exact: true }).press('Enter');
  // The reply is done when its disclosure of memories and tools is there.
  await page.locator('li.turn.theirs').nth(before).locator('details.used').waitFor();
}

