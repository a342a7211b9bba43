import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { WhatsAppSessionStore } from '@roster/channel-whatsapp';
import { testInstallationKey } from '@roster/config/testing';
import { mirrorReport } from '@roster/learning';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from './support/fake-openai.js';
import { chromiumLaunch, startWebRoster, type WebRoster } from './support/web-roster.js';

/** Screenshots of every page, kept for a person to look at (gitignored). */
const artifacts = fileURLToPath(new URL('./artifacts/', import.meta.url));

let roster: WebRoster;
let browser: Browser;
let fake: Awaited<ReturnType<typeof startFakeOpenAi>>;
/** Every console error and uncaught exception of any page, with the address it happened on. */
const problems: string[] = [];
/** Every address any watched page asked for: all of them must be the server's own. */
const requested: string[] = [];

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

function watch(page: Page): Page {
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
function expectOwnOriginOnly(): void {
  const own = new URL(roster.address).origin;
  expect(requested.filter((url) => url.startsWith(`${own}/api/`)).length).toBeGreaterThan(0);
  expect(requested.filter((url) => url.startsWith(`${own}/assets/`)).length).toBeGreaterThan(0);
  expect(requested.filter((url) => new URL(url).origin !== own)).toEqual([]);
}

/** A day, counted from today, as a date field takes it. */
const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toLocaleDateString('en-CA');

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: `${artifacts}${name}.png`, fullPage: true });
}

/** Go to a page through the navigation, as a person would. */
async function open(page: Page, link: string, heading: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: link, exact: true }).click();
  await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe(heading);
  await page.locator('.loading').first().waitFor({ state: 'detached' });
}

/** Every form control has a name a screen reader says: its label, or an aria-label. */
async function unlabelledControls(page: Page): Promise<string[]> {
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
async function talkTo(page: Page, whom: string): Promise<void> {
  await page.getByLabel('Talk to', { exact: true }).selectOption(whom);
  await expect.poll(() => new URL(page.url()).search).toBe(whom === 'team' ? '?team=true' : `?agent=${whom}`);
  await page.getByRole('log', { name: whom === 'team' ? 'Conversation with the whole team' : `Conversation with ${whom}`, exact: true }).waitFor({ state: 'attached' });
}

async function say(page: Page, words: string): Promise<void> {
  const before = await page.locator('li.turn.theirs').count();
  await page.getByLabel('Message', { exact: true }).fill(words);
  await page.getByLabel('Message', { exact: true }).press('Enter');
  // The reply is done when its disclosure of memories and tools is there.
  await page.locator('li.turn.theirs').nth(before).locator('details.used').waitFor();
}

describe('the web page in a browser', () => {
  it('signs in from the one-time link, creates an agent, chats, shows and forgets a fact, approves a lesson, and shows the mirror', async () => {
    const page = watch(await browser.newPage({ viewport: { width: 1280, height: 900 } }));

    // Sign in: the token rides in the fragment and leaves the address bar at once.
    await page.goto(await roster.loginLink());
    await expect.poll(() => new URL(page.url()).pathname).toBe('/agents');
    expect(page.url()).not.toContain('#');
    await expect.poll(() => page.locator('header').textContent()).toContain('Ada (owner)');
    // Landmarks.
    expect(await page.locator('header').count()).toBe(1);
    expect(await page.getByRole('navigation', { name: 'Main' }).count()).toBe(1);
    expect(await page.getByRole('main').count()).toBe(1);
    // A reload lands on the same page (the server answers its address with the shell); the skip link is the first stop of Tab.
    await page.reload();
    await page.getByRole('heading', { level: 2, name: 'Your agents' }).waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');

    // Create an agent, with the engine chosen from the list and tested first.
    await page.getByLabel('Name', { exact: true }).fill('Scout');
    await page.getByLabel('Job', { exact: true }).fill('Plans trips and remembers the details.');
    expect(await page.getByLabel('Engine', { exact: true }).inputValue()).toBe('offline');
    await page.getByRole('button', { name: 'Test engine' }).click();
    await expect.poll(() => page.locator('.engine .outcome').textContent()).toMatch(/^Works/);
    await page.getByRole('button', { name: 'Create agent' }).click();
    const card = page.locator('li.card[data-agent="Scout"]');
    await card.waitFor();
    // The confirmation is seen, not only said to a screen reader.
    await expect.poll(() => page.locator('div.flash[role="status"]', { hasText: 'Scout was created.' }).isVisible()).toBe(true);
    expect(await card.textContent()).toContain('Plans trips and remembers the details.');
    expect(await unlabelledControls(page)).toEqual([]);
    await shot(page, 'agents');

    // Chat: the reply streams in, with what it used behind a disclosure.
    await card.getByRole('link', { name: 'Chat with Scout' }).click();
    await page.getByLabel('Message', { exact: true }).waitFor();
    await say(page, 'remember that my locker code is at the blue door');
    const reply = page.locator('li.turn.theirs').last();
    expect(await reply.locator('p').first().textContent()).toBe('Noted: your locker code is at the blue door');
    await reply.locator('details.used summary').click();
    expect(await reply.locator('details.used').textContent()).toContain('remember');
    // Two statements of one preference (a lesson to review), and a correction (a mirror case).
    await say(page, 'from now on, give me prices in euros first');
    await say(page, 'next time give me prices in euros first');
    await say(page, "that's wrong, the 5pm train is the 17:00 one");
    expect(await unlabelledControls(page)).toEqual([]);
    await shot(page, 'chat');
    // A reload shows the conversation so far, from the server.
    await page.reload();
    await page.locator('li.turn.past').first().waitFor();
    expect(await page.locator('li.turn.past.mine p').allTextContents()).toEqual([
      'remember that my locker code is at the blue door',
      'from now on, give me prices in euros first',
      'next time give me prices in euros first',
      "that's wrong, the 5pm train is the 17:00 one",
    ]);
    expect(await page.locator('li.turn.past.theirs[data-agent="Scout"]').count()).toBe(4);

    // Memory: the fact, with its provenance.
    await open(page, 'Memory', 'Memory');
    const fact = page.locator('li.fact', { hasText: 'my locker code is at the blue door' });
    await fact.waitFor();
    const provenance = await fact.locator('.provenance').textContent();
    expect(provenance).toContain('told by Ada');
    expect(provenance).toContain('on web');
    expect(provenance).toContain('remember');
    // The message it came from: the door, the time, and the owner's own words.
    const source = fact.locator('.provenance li.source');
    expect(await source.count()).toBe(1);
    expect(await source.locator('.channel').textContent()).toBe('web');
    expect(await source.locator('time').count()).toBe(1);
    expect(await source.textContent()).toContain('you said: remember that my locker code is at the blue door');
    expect(await source.locator('q').textContent()).toBe('remember that my locker code is at the blue door');
    expect(await unlabelledControls(page)).toEqual([]);
    await shot(page, 'memory');

    // What was true yesterday: not yet this fact; today (the positive control): it is.
    await page.getByLabel('What was true on', { exact: true }).fill(day(-1));
    await page.getByRole('button', { name: 'Show' }).click();
    await page.locator('.memory .empty').waitFor();
    expect(await page.locator('li.fact', { hasText: 'blue door' }).count()).toBe(0);
    await page.getByLabel('What was true on', { exact: true }).fill(day(0));
    await page.getByRole('button', { name: 'Show' }).click();
    await page.locator('li.fact', { hasText: 'blue door' }).waitFor();
    await page.getByRole('link', { name: 'Now' }).click();

    // Forget it: a tombstone, and its words nowhere on the page.
    const forgetting = page.locator('li.fact', { hasText: 'my locker code is at the blue door' });
    await forgetting.getByRole('button', { name: 'History' }).click();
    await forgetting.locator('.timeline li.version').first().waitFor();
    expect(await page.content()).toContain('blue door');
    await forgetting.getByRole('button', { name: 'Forget…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Forget', exact: true }).click();
    await page.locator('.timeline li.version.tombstoned').waitFor();
    expect(await page.locator('.tombstone').count()).toBeGreaterThan(0);
    const afterForget = await page.content();
    expect(afterForget).not.toContain('blue door');
    expect(afterForget).not.toContain('locker code');
    // The other facts are still there.
    expect(afterForget).toContain('the 5pm train is the 17:00 one');
    await shot(page, 'memory-forgotten');
    // The chat's history keeps the place of the forgotten lines, not their words.
    await open(page, 'Chat', 'Chat');
    await page.locator('li.turn.past').first().waitFor();
    expect(await page.locator('li.turn.past.forgotten').count()).toBeGreaterThan(0);
    const chatAfterForget = await page.content();
    expect(chatAfterForget).not.toContain('blue door');
    expect(chatAfterForget).toContain('give me prices in euros first');

    // A lesson: the review job proposes it from the two statements; approved, it is active.
    const scout = (await roster.runtime.core.directory.listAgents()).find((agent) => agent.name === 'Scout')!;
    expect(await roster.runJob('review', { agentId: scout.id })).toMatchObject({ proposed: 1 });
    await open(page, 'Lessons & approvals', 'Lessons & approvals');
    const pending = page.locator('li.approval');
    await pending.waitFor();
    expect(await pending.locator('blockquote.lesson-text').textContent()).toBe('Give me prices in euros first.');
    // The evidence: each statement with whose it was, the door, the time, and its words.
    const evidence = pending.locator('.evidence li');
    expect(await evidence.count()).toBe(2);
    expect(await evidence.locator('blockquote.said').allTextContents()).toEqual(['from now on, give me prices in euros first', 'next time give me prices in euros first']);
    for (const item of await evidence.all()) {
      expect(await item.locator('.said-where').textContent()).toMatch(/^preference said by Ada on web, /);
      expect(await item.locator('.said-where time').count()).toBe(1);
    }
    await shot(page, 'lessons-pending');
    await pending.getByRole('button', { name: 'Approve' }).click();
    const active = page.getByRole('list', { name: 'Active lessons' });
    await active.waitFor();
    expect(await active.locator('blockquote.lesson-text').allTextContents()).toEqual(['Give me prices in euros first.']);
    // Its version and who approved it.
    expect(await active.locator('.tag.version').allTextContents()).toEqual(['version 1']);
    expect(await active.locator('.approval-line').textContent()).toMatch(/^Approved by Ada, .+\.$/);
    expect(await page.locator('li.approval').count()).toBe(0);
    await shot(page, 'lessons');
    // The evidence it was approved on stays with it.
    await active.locator('details.evidence-box summary').click();
    expect(await active.locator('.evidence blockquote.said').allTextContents()).toEqual(['from now on, give me prices in euros first', 'next time give me prices in euros first']);
    await shot(page, 'lessons-evidence');

    // The mirror: the correction became a case; a night's replay passed and shows on the chart.
    await expect.poll(async () => (await mirrorReport(roster.database, scout.id)).total, { timeout: 20_000 }).toBeGreaterThan(0);
    expect(await roster.runJob('mirror', { agentId: scout.id, rerunAfterHours: 0 })).toMatchObject({ passed: 1 });
    await open(page, 'Mirror', 'Mirror');
    await page.locator('li.mirror-case').first().waitFor();
    expect(await page.locator('.headline').textContent()).toBe('1 of 1 corrections no longer repeated');
    expect(await page.locator('li.mirror-case').first().textContent()).toContain("that's wrong, the 5pm train is the 17:00 one");
    expect(await page.locator('svg.chart circle.point').count()).toBe(1);
    expect(await page.locator('svg.chart title').textContent()).toContain('100%');
    await shot(page, 'mirror');

    // People; the channels (WhatsApp waiting for a scan, its code on the screen); the audit, whose chain verifies.
    await new WhatsAppSessionStore(roster.database, testInstallationKey).showQr('https://wa.me/settings/linked_devices#2@ref,bm9pc2U=,aWQ=,YWR2,1');
    await open(page, 'Channels', 'Channels');
    await page.locator('.channel-link img.qr').waitFor();
    expect(await page.locator('.channel-link').textContent()).toContain('waiting for a scan');
    expect(await page.locator('.channel-link img.qr').evaluate((image) => (image as HTMLImageElement).naturalWidth)).toBeGreaterThan(0);
    await open(page, 'People', 'People');
    await page.locator('li.card[data-person="Ada"]').waitFor();
    await page.getByRole('button', { name: 'Link code for Ada' }).click();
    await expect.poll(() => page.locator('li.card[data-person="Ada"] .link-code').textContent()).toMatch(/Send \S+ to the bot/);
    expect(await unlabelledControls(page)).toEqual([]);
    await shot(page, 'people');
    await open(page, 'Audit', 'Audit');
    await page.locator('table.events tbody tr').first().waitFor();
    await page.getByRole('button', { name: 'Verify chain' }).click();
    await expect.poll(() => page.locator('.outcome.ok').textContent()).toMatch(/^Every chain holds/);
    expect(await unlabelledControls(page)).toEqual([]);
    await shot(page, 'audit');

    // A phone-sized screen: every page fits its width.
    await page.setViewportSize({ width: 390, height: 844 });
    for (const [link, heading] of [
      ['Agents', 'Agents'],
      ['Chat', 'Chat'],
      ['Memory', 'Memory'],
      ['Lessons & approvals', 'Lessons & approvals'],
      ['Mirror', 'Mirror'],
      ['People', 'People'],
      ['Channels', 'Channels'],
      ['Audit', 'Audit'],
      ['Account', 'Account'],
    ] as const) {
      await open(page, link, heading);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, `${link} is wider than the screen`).toBeLessThanOrEqual(0);
      await shot(page, `phone-${link.split(' ')[0]!.toLowerCase()}`);
    }

    expect(problems).toEqual([]);
    expectOwnOriginOnly();
  }, 180_000);

  it('updates, corrects and confirms a fact with its versions shown, and edits, archives, restores and purges an agent', async () => {
    const keeper = await roster.runtime.core.directory.addAgent({ name: 'Keeper', job: 'Keeps notes.' });
    await roster.runtime.memory.remember(
      { agentId: keeper.id, personId: roster.owner.id, audience: 'private' },
      { content: 'my flat is on the third floor', provenance: { actor: { kind: 'person', id: roster.owner.id } } },
    );
    const context = await browser.newContext();
    const page = watch(await context.newPage());
    await page.goto(await roster.loginLink());
    await expect.poll(() => new URL(page.url()).pathname).toBe('/agents');

    // That changed: the old content stays as the earlier version.
    await page.goto(`${roster.address}/memory?agent=Keeper`);
    let fact = page.locator('li.fact', { hasText: 'my flat is on the third floor' });
    await fact.getByRole('button', { name: 'Update…' }).click();
    await fact.getByLabel('It changed; from now on it is', { exact: true }).fill('my flat is on the fourth floor');
    await fact.getByRole('button', { name: 'Save update' }).click();
    fact = page.locator('li.fact', { hasText: 'my flat is on the fourth floor' });
    await fact.getByRole('button', { name: 'History' }).click();
    const versions = fact.locator('.timeline li.version');
    await versions.nth(1).waitFor();
    expect(await versions.locator('.content').allTextContents()).toEqual(['my flat is on the third floor', 'my flat is on the fourth floor']);
    expect(await versions.locator('strong').allTextContents()).toEqual(['Earlier version', 'This version']);

    // What did it believe before the update? At the earlier version's own moment: the old content, not the new.
    await versions.nth(0).getByRole('link', { name: 'What it believed then' }).click();
    await page.locator('.memory .when').waitFor();
    const believed = page.locator('li.fact > p.content');
    expect(await believed.allTextContents()).toEqual(['my flat is on the third floor']);
    expect(await page.getByLabel('What did it believe on', { exact: true }).inputValue()).toBe(day(0));
    expect(await page.getByLabel('At', { exact: true }).inputValue()).toMatch(/^\d{2}:\d{2}:\d{2}$/);
    await shot(page, 'memory-believed');
    // As believed at the end of today: the new content, not the old.
    await page.getByLabel('At', { exact: true }).fill('');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.locator('li.fact > p.content', { hasText: 'my flat is on the fourth floor' }).waitFor();
    expect(await believed.allTextContents()).toEqual(['my flat is on the fourth floor']);
    // As believed yesterday, before it was told either: nothing.
    await page.getByLabel('What did it believe on', { exact: true }).fill(day(-1));
    await page.getByRole('button', { name: 'Show' }).click();
    await page.locator('.memory .empty').waitFor();
    expect(await page.locator('li.fact', { hasText: 'floor' }).count()).toBe(0);
    await page.getByRole('link', { name: 'Now' }).click();
    fact = page.locator('li.fact', { hasText: 'my flat is on the fourth floor' });
    await fact.waitFor();

    // That was wrong: corrected, then confirmed.
    await fact.getByRole('button', { name: 'Correct…' }).click();
    await fact.getByLabel('It was wrong; the right content is', { exact: true }).fill('my flat is on the fifth floor');
    await fact.getByRole('button', { name: 'Save correction' }).click();
    fact = page.locator('li.fact', { hasText: 'my flat is on the fifth floor' });
    await expect.poll(() => page.locator('div.flash[role="status"]', { hasText: 'The fact was corrected.' }).isVisible()).toBe(true);
    await fact.getByRole('button', { name: 'Confirm' }).click();
    await page.locator('li.fact .badge-verified').waitFor();
    expect(await page.locator('li.fact', { hasText: 'my flat is on the fifth floor' }).locator('.badge').first().textContent()).toBe('verified');
    expect(await page.locator('li.fact', { hasText: 'fourth floor' }).count()).toBe(0);
    await shot(page, 'memory-versions');

    // Each history row says what was true and believed at its own record time: the wrong version was never true, and believed only until the correction.
    fact = page.locator('li.fact', { hasText: 'my flat is on the fifth floor' });
    await fact.getByRole('button', { name: 'History' }).click();
    const rows = fact.locator('.timeline li.version');
    await rows.nth(2).waitFor();
    expect(await rows.locator('.content').allTextContents()).toEqual(['my flat is on the third floor', 'my flat is on the fourth floor', 'my flat is on the fifth floor']);
    expect(await rows.nth(1).locator('.badge').textContent()).toBe('retracted');
    const wrongRow = (await rows.nth(1).locator('.times').textContent()) ?? '';
    expect(wrongRow).toMatch(/^never true: it was wrong; believed from .+ until .+; event /);
    expect(wrongRow).not.toMatch(/still/);
    expect(await rows.nth(2).locator('.times').textContent()).toMatch(/ – still; recorded .+ \(still believed\)/);
    await shot(page, 'memory-history');
    // Before the correction: the fourth floor, believed then (it was not yet retracted); no "Retracted — withheld" section.
    await rows.nth(1).getByRole('link', { name: 'What it believed then' }).click();
    await page.locator('.memory .when').waitFor();
    expect(await believed.allTextContents()).toEqual(['my flat is on the fourth floor']);
    expect(await page.locator('li.fact .badge').first().textContent()).toBe('believed then');
    expect(await page.locator('section.trust[data-trust="retracted"]').count()).toBe(0);
    expect(await page.getByRole('heading', { level: 3, name: /^Believed then \(1\)/ }).count()).toBe(1);
    await shot(page, 'memory-believed-before-correction');
    // After it (the end of today): the fifth floor, verified; the wrong one is nowhere.
    await page.getByLabel('At', { exact: true }).fill('');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.locator('li.fact > p.content', { hasText: 'my flat is on the fifth floor' }).waitFor();
    expect(await believed.allTextContents()).toEqual(['my flat is on the fifth floor']);
    expect(await page.locator('li.fact .badge').first().textContent()).toBe('verified');
    expect(await page.locator('section.trust[data-trust="retracted"], section.trust[data-trust="believed then"]').count()).toBe(0);

    // The agent: edited, archived, restored, archived again, then purged once its name is typed (only an archived agent can be).
    await page.goto(`${roster.address}/agents`);
    let card = page.locator('li.card[data-agent="Keeper"]');
    await card.getByRole('button', { name: 'Edit Keeper' }).click();
    await card.getByLabel('Job', { exact: true }).fill('Keeps notes about flats.');
    await card.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => page.locator('li.card[data-agent="Keeper"] .job').textContent()).toBe('Keeps notes about flats.');
    card = page.locator('li.card[data-agent="Keeper"]');
    await card.getByRole('button', { name: 'Archive Keeper' }).click();
    await expect.poll(() => page.locator('li.card[data-agent="Keeper"] .badge').textContent()).toBe('archived');
    await page.locator('li.card[data-agent="Keeper"]').getByRole('button', { name: 'Restore Keeper' }).click();
    await expect.poll(() => page.locator('li.card[data-agent="Keeper"] .badge').textContent()).toBe('active');
    expect(await page.locator('li.card[data-agent="Keeper"]').getByRole('button', { name: 'Purge Keeper…' }).count()).toBe(0);
    await page.locator('li.card[data-agent="Keeper"]').getByRole('button', { name: 'Archive Keeper' }).click();
    await page.locator('li.card[data-agent="Keeper"]').getByRole('button', { name: 'Purge Keeper…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Purge Keeper?' });
    const purge = dialog.getByRole('button', { name: 'Purge Keeper' });
    expect(await purge.isDisabled()).toBe(true);
    await dialog.getByLabel('Type Keeper to confirm', { exact: true }).fill('keeper');
    expect(await purge.isDisabled()).toBe(true);
    await dialog.getByLabel('Type Keeper to confirm', { exact: true }).fill('Keeper');
    await purge.click();
    await page.locator('li.card[data-agent="Keeper"]').waitFor({ state: 'detached' });
    expect((await roster.runtime.core.directory.listAgents({ includeArchived: true })).map((agent) => agent.name)).not.toContain('Keeper');
    await context.close();
    expect(problems).toEqual([]);
    expectOwnOriginOnly();
  }, 120_000);

  it('refuses a spent login link, saying how to get a fresh one', async () => {
    const link = await roster.loginLink();
    const first = await browser.newContext();
    const firstPage = watch(await first.newPage());
    await firstPage.goto(link);
    await expect.poll(() => new URL(firstPage.url()).pathname).toBe('/agents');
    await first.close();

    // The same link again, in another browser: no session, and the way to a new link.
    const second = await browser.newContext();
    const page = await second.newPage();
    const errors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(`${page.url()}: ${error.message}`));
    await page.goto(link);
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/^Could not sign in: /);
    expect(await page.locator('main').textContent()).toContain('npx roster login-link');
    expect(page.url()).toBe(`${roster.address}/login`);
    expect(await page.getByRole('navigation', { name: 'Main' }).count()).toBe(0);
    // The browser reports the refused request itself, and nothing else.
    expect(errors).toEqual([expect.stringContaining('401')]);
    await shot(page, 'login-refused');
    await second.close();
    expect(problems).toEqual([]);
  });

  it('gives a member the chat and their own memory only', async () => {
    const { directory } = roster.runtime.core;
    const guide = await directory.addAgent({ name: 'Guide', job: 'Shows the way.' });
    const bob = await directory.addPerson({ name: 'Bob' });
    await roster.runtime.memory.remember(
      { agentId: guide.id, personId: roster.owner.id, audience: 'private' },
      { content: 'Ada keeps the spare key under the mat', provenance: { actor: { kind: 'person', id: roster.owner.id } } },
    );

    const member = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = watch(await member.newPage());
    await page.goto(await roster.loginLink(bob));
    await expect.poll(() => new URL(page.url()).pathname).toBe('/chat');
    expect(await page.getByRole('navigation', { name: 'Main' }).getByRole('link').allTextContents()).toEqual(['Chat', 'Memory', 'Account']);
    await talkTo(page, 'Guide');
    await say(page, 'remember that my bike is the red one');
    expect(await page.locator('li.turn.theirs > p').last().textContent()).toBe('Noted: your bike is the red one');

    await open(page, 'Memory', 'Memory');
    await page.getByLabel('Agent', { exact: true }).selectOption('Guide');
    await page.locator('li.fact', { hasText: 'my bike is the red one' }).waitFor();
    expect(await page.getByLabel('Person', { exact: true }).count()).toBe(0);
    expect(await page.content()).not.toContain('spare key');
    // Their own words, in the message the fact came from.
    expect(await page.locator('li.fact', { hasText: 'my bike is the red one' }).locator('li.source q').textContent()).toBe('remember that my bike is the red one');
    await shot(page, 'member-memory');
    // Their own data, from the account page: their words and facts, none of Ada's.
    await open(page, 'Account', 'Account');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download my data' }).click()]);
    expect(download.suggestedFilename()).toBe('roster-export-Bob.json');
    const exported = JSON.parse(fs.readFileSync((await download.path())!, 'utf8')) as { person: { name: string }; facts: Array<{ agent: string; versions: Array<{ content: string | null }> }>; messages: Array<{ content: string | null }> };
    expect(exported.person.name).toBe('Bob');
    expect(exported.facts).toContainEqual(expect.objectContaining({ agent: 'Guide', versions: [expect.objectContaining({ content: 'my bike is the red one' })] }));
    expect(exported.messages.map((message) => message.content)).toContain('remember that my bike is the red one');
    expect(JSON.stringify(exported)).not.toContain('spare key');
    // An owner's page is not a member's: the address leads back to the chat.
    await page.goto(`${roster.address}/agents`);
    await expect.poll(() => new URL(page.url()).pathname).toBe('/chat');
    await member.close();

    // The positive control: the owner's memory page of Guide does show Ada's fact.
    const owner = await browser.newContext();
    const ownerPage = watch(await owner.newPage());
    await ownerPage.goto(await roster.loginLink());
    await expect.poll(() => new URL(ownerPage.url()).pathname).toBe('/agents');
    await ownerPage.goto(`${roster.address}/memory?agent=Guide`);
    await ownerPage.locator('li.fact', { hasText: 'Ada keeps the spare key under the mat' }).waitFor();
    expect(await ownerPage.content()).toContain('my bike is the red one');
    // Bob's fact names where and when he said it, not his words: those are his.
    const bobsSource = ownerPage.locator('li.fact', { hasText: 'my bike is the red one' }).locator('li.source');
    expect(await bobsSource.textContent()).toContain('Bob said: their words are theirs: not shown here.');
    expect(await ownerPage.content()).not.toContain('remember that my bike');
    await owner.close();

    expect(problems).toEqual([]);
    expectOwnOriginOnly();
  }, 120_000);

  it('chats with the whole team, approves and retires one lesson and rejects another, stores a channel token write-only, and makes and revokes an API token', async () => {
    const { directory } = roster.runtime.core;
    await directory.addAgent({ name: 'Atlas', job: 'Knows maps.' });
    await directory.addAgent({ name: 'Bard', job: 'Writes verses.' });
    const active = (await directory.listAgents()).map((agent) => agent.name).sort();
    const context = await browser.newContext();
    const page = watch(await context.newPage());
    await page.goto(await roster.loginLink());
    await expect.poll(() => new URL(page.url()).pathname).toBe('/agents');

    // The whole team: every active agent answers the one message, each in its own reply.
    await open(page, 'Chat', 'Chat');
    await talkTo(page, 'team');
    await page.getByLabel('Message', { exact: true }).fill('hello, everyone');
    await page.getByLabel('Message', { exact: true }).press('Enter');
    await expect.poll(() => page.locator('li.turn.theirs details.used').count(), { timeout: 90_000 }).toBe(active.length);
    expect((await page.locator('li.turn.theirs').evaluateAll((items) => items.map((item) => item.getAttribute('data-agent')))).sort()).toEqual(active);
    await shot(page, 'chat-team');

    // Two preferences said twice to Atlas: the review proposes two lessons.
    await talkTo(page, 'Atlas');
    for (const words of ['from now on, show distances in kilometres', 'next time show distances in kilometres', 'from now on, name the nearest station', 'next time name the nearest station']) {
      await say(page, words);
    }
    const atlas = (await directory.listAgents()).find((agent) => agent.name === 'Atlas')!;
    expect(await roster.runJob('review', { agentId: atlas.id })).toMatchObject({ proposed: 2 });
    await page.goto(`${roster.address}/lessons?agent=Atlas`);
    const approvals = page.locator('li.approval');
    await expect.poll(() => approvals.count()).toBe(2);
    const kilometres = page.locator('li.approval', { hasText: 'kilometres' });
    const station = page.locator('li.approval', { hasText: 'station' });
    // Rejected: gone from the waiting list, and never active.
    await station.getByRole('button', { name: 'Reject' }).click();
    await expect.poll(() => page.locator('li.approval').count()).toBe(1);
    expect(await page.locator('li.approval', { hasText: 'station' }).count()).toBe(0);
    const decided = (await page.evaluate(async () => (await fetch('/api/approvals?status=all&agent=Atlas')).json())) as { approvals: Array<{ status: string; text: string }> };
    expect(decided.approvals.filter((approval) => approval.text.includes('station')).map((approval) => approval.status)).toEqual(['rejected']);
    await kilometres.getByRole('button', { name: 'Approve' }).click();
    await page.goto(`${roster.address}/lessons?agent=Atlas`);
    const activeLessons = page.getByRole('list', { name: 'Active lessons' });
    await activeLessons.waitFor();
    expect(await activeLessons.locator('blockquote.lesson-text').allTextContents()).toEqual([expect.stringContaining('kilometres')]);
    expect(await page.locator('li.approval').count()).toBe(0);
    expect(await page.content()).not.toContain('nearest station');
    // Retired, with a reason: it moves to the retired list.
    await activeLessons.getByRole('button', { name: 'Retire…' }).click();
    await page.getByLabel('Why it no longer holds', { exact: true }).fill('Miles again from now on.');
    await page.getByRole('button', { name: 'Retire', exact: true }).click();
    const retiredLessons = page.getByRole('list', { name: 'Retired lessons' });
    await retiredLessons.waitFor();
    expect(await retiredLessons.locator('blockquote.lesson-text').allTextContents()).toEqual([expect.stringContaining('kilometres')]);
    expect(await retiredLessons.locator('.tag.version').allTextContents()).toEqual(['version 1']);
    expect(await retiredLessons.locator('.approval-line').textContent()).toMatch(/^Approved by Ada, /);
    expect(await retiredLessons.textContent()).toContain('Miles again from now on.');
    expect(await page.getByRole('list', { name: 'Active lessons' }).count()).toBe(0);
    await shot(page, 'lessons-retired');

    // A channel's token, entered on the page: stored, never shown again.
    const token = '777001:AAF-page-entered-telegram-token';
    await open(page, 'Channels', 'Channels');
    const telegram = page.locator('li.card[data-channel="telegram"]');
    await telegram.getByLabel('The bot token from @BotFather', { exact: true }).fill(token);
    await telegram.getByRole('button', { name: 'Save telegram token' }).click();
    await expect.poll(() => page.locator('li.card[data-channel="telegram"] .badge').first().textContent()).toBe('on');
    expect(await page.locator('li.card[data-channel="telegram"]').textContent()).toContain('stored, sealed with the installation key');
    expect(await page.content()).not.toContain(token);
    expect(await page.locator('li.card[data-channel="telegram"] input[type="password"]').inputValue()).toBe('');
    const listed = await page.evaluate(async () => (await fetch('/api/channels')).text());
    expect(listed).toContain('"source":"stored"');
    expect(listed).not.toContain(token);
    // Its binding: the bot talks to Atlas.
    await page.locator('li.card[data-channel="telegram"]').getByLabel('Talks to', { exact: true }).selectOption('Atlas');
    await page.locator('li.card[data-channel="telegram"]').getByRole('button', { name: 'Save binding' }).click();
    await expect.poll(() => page.locator('li.card[data-channel="telegram"] .outcome.ok').textContent()).toBe('telegram talks to Atlas under the pairing policy.');
    expect(await unlabelledControls(page)).toEqual([]);
    await shot(page, 'channels');

    // A personal API token: shown once, works as a bearer token, and stops working once revoked.
    await open(page, 'Account', 'Account');
    await page.getByLabel('Name', { exact: true }).fill('backup script');
    await page.getByRole('button', { name: 'Make token' }).click();
    const shown = (await page.locator('pre.token').textContent()) ?? '';
    expect(shown).toMatch(/^rst_/);
    // Ready for the next token: the name is not left in the field.
    expect(await page.getByLabel('Name', { exact: true }).inputValue()).toBe('');
    const asScript = () => fetch(`${roster.address}/api/me`, { headers: { authorization: `Bearer ${shown}` } }).then((response) => response.status);
    expect(await asScript()).toBe(200);
    expect(await unlabelledControls(page)).toEqual([]);
    await shot(page, 'account');
    await page.reload();
    await page.locator('tr[data-token="backup script"]').waitFor();
    expect(await page.content()).not.toContain(shown);
    await page.getByRole('button', { name: 'Revoke backup script' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke', exact: true }).click();
    await page.locator('tr[data-token="backup script"]').waitFor({ state: 'detached' });
    expect(await asScript()).toBe(401);

    await context.close();
    expect(problems).toEqual([]);
    expectOwnOriginOnly();
  }, 180_000);

  it('turns a forgotten fact into a tombstone at once, with when and who asked, and keeps it one after a reload', async () => {
    const { directory } = roster.runtime.core;
    const vault = await directory.addAgent({ name: 'Vault', job: 'Keeps where things are.' });
    const cleo = await directory.addPerson({ name: 'Cleo' });
    const remember = (personId: string, content: string) =>
      roster.runtime.memory.remember({ agentId: vault.id, personId, audience: 'private' }, { content, provenance: { actor: { kind: 'person', id: personId } } });
    await remember(roster.owner.id, 'my umbrella hangs by the green door');
    await remember(roster.owner.id, 'my bicycle sleeps under the stairs');
    await remember(cleo.id, 'my scarf is in the red drawer');

    const context = await browser.newContext();
    const page = watch(await context.newPage());
    await page.goto(await roster.loginLink());
    await expect.poll(() => new URL(page.url()).pathname).toBe('/agents');
    await page.goto(`${roster.address}/memory?agent=Vault&person=Ada`);
    const ada = page.locator('section.group', { has: page.getByRole('heading', { level: 2, name: 'About Ada' }) });
    await ada.getByRole('heading', { level: 3, name: /^Active \(2\)/ }).waitFor();

    const umbrella = ada.locator('li.fact', { hasText: 'my umbrella hangs by the green door' });
    await umbrella.getByRole('button', { name: 'Forget…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Forget', exact: true }).click();

    // At once, without a reload: out of Active, a tombstone under Forgotten saying when and who asked, and no word of it.
    const tombstones = ada.locator('section.trust[data-trust="forgotten"] li.card.tombstoned');
    await tombstones.first().waitFor();
    const shownAtOnce = async () => {
      expect(await ada.getByRole('heading', { level: 3, name: /^Active \(1\)/ }).count()).toBe(1);
      expect(await ada.getByRole('heading', { level: 3, name: /^Forgotten \(1\)/ }).count()).toBe(1);
      expect(await ada.locator('section.trust[data-trust="active"] li.fact p.content').allTextContents()).toEqual(['my bicycle sleeps under the stairs']);
      expect(await tombstones.count()).toBe(1);
      expect(await tombstones.locator('.forgotten-when').textContent()).toMatch(/^Forgotten .+, asked by Ada \(you\)\.$/);
      const when = await tombstones.locator('.forgotten-when time').getAttribute('datetime');
      expect(Math.abs(Date.parse(when ?? '') - Date.now())).toBeLessThan(10 * 60_000);
      const html = await page.content();
      expect(html).not.toContain('umbrella');
      expect(html).not.toContain('green door');
      return when;
    };
    const forgottenAt = await shownAtOnce();
    await shot(page, 'memory-tombstone');

    // After a reload: the same tombstone, the same moment, from the server.
    await page.reload();
    await tombstones.first().waitFor();
    expect(await shownAtOnce()).toBe(forgottenAt);
    // The tombstone's history: the forgotten version, without its words.
    await tombstones.getByRole('button', { name: 'History' }).click();
    await tombstones.locator('.timeline li.version.tombstoned').first().waitFor();
    expect(await page.content()).not.toContain('umbrella');
    // It was believed until it was forgotten, not "still".
    const forgottenRow = (await tombstones.locator('.timeline li.version .times').allTextContents()).join(' | ');
    expect(forgottenRow).toMatch(/until forgotten /);
    expect(forgottenRow).not.toMatch(/still/);

    // Scoped: Cleo's memory with Vault holds her fact and no tombstone of Ada's.
    const cleos = (await (await page.request.get(`${roster.address}/api/agents/Vault/memory?person=Cleo`)).json()) as { groups: Array<{ facts: Array<{ content: string }>; tombstones: unknown[] }> };
    expect(cleos.groups.map((group) => ({ facts: group.facts.map((fact) => fact.content), tombstones: group.tombstones.length }))).toEqual([{ facts: ['my scarf is in the red drawer'], tombstones: 0 }]);

    await context.close();
    expect(problems).toEqual([]);
  }, 120_000);

  it('refuses a message over 4,000 characters whole, with the limit shown, and sends nothing; shows a counter near the limit', async () => {
    await roster.addAgent('Parrot', 'Listens.');
    const context = await browser.newContext();
    const page = watch(await context.newPage());
    await page.goto(await roster.loginLink());
    await expect.poll(() => new URL(page.url()).pathname).toBe('/agents');
    await page.goto(`${roster.address}/chat?agent=Parrot`);
    const message = page.getByLabel('Message', { exact: true });
    await message.waitFor();
    const counter = page.locator('#message-counter');
    const transcript = async () =>
      ((await (await page.request.get(`${roster.address}/api/chat/history?team=false&limit=500`)).json()) as { messages: Array<{ role: string; text: string | null }> }).messages.filter(
        (line) => line.role === 'person',
      );
    const before = await transcript();

    // A short message: no counter.
    await message.fill('hello there');
    expect(await counter.isHidden()).toBe(true);

    // A 20,000-character paste: kept whole in the box, counted, and refused with the limit; nothing reaches the server.
    const paste = 'word '.repeat(4000).trim();
    await message.fill('');
    await message.focus();
    await page.keyboard.insertText(paste);
    expect((await message.inputValue()).length).toBe(paste.length);
    await expect.poll(() => counter.textContent()).toBe('19,999 of 4,000 characters: 15,999 too many.');
    expect(await counter.isVisible()).toBe(true);
    expect(await message.getAttribute('aria-invalid')).toBe('true');
    await message.press('Enter');
    const refusal = page.locator('form.composer .outcome.error');
    await expect.poll(() => refusal.textContent()).toBe('The message is 19,999 characters; the most is 4,000. Nothing was sent: shorten it, or send it in parts.');
    await page.getByRole('button', { name: 'Send' }).click();
    expect(await refusal.textContent()).toContain('the most is 4,000');
    expect(await page.locator('li.turn.mine:not(.past)').count()).toBe(0);
    expect((await message.inputValue()).length).toBe(paste.length);
    await shot(page, 'chat-too-long');

    // 5,000 characters: the same.
    const five = 'x'.repeat(5000);
    await message.fill(five);
    await message.press('Enter');
    await expect.poll(() => refusal.textContent()).toBe('The message is 5,000 characters; the most is 4,000. Nothing was sent: shorten it, or send it in parts.');
    expect(await page.locator('li.turn.mine:not(.past)').count()).toBe(0);
    expect(await transcript()).toEqual(before);

    // The positive control: 3,900 characters, near the limit, counted and sent whole.
    const near = `${'the lazy dog naps. '.repeat(205)}done.`;
    await message.fill(near);
    await expect.poll(() => counter.textContent()).toBe('3,900 of 4,000 characters.');
    expect(await message.getAttribute('aria-invalid')).toBeNull();
    await say(page, near);
    expect(await page.locator('li.turn.mine:not(.past) p').allTextContents()).toEqual([near]);
    const after = await transcript();
    expect(after.slice(before.length).map((line) => line.text)).toEqual([near]);
    expect(await counter.isHidden()).toBe(true);

    await context.close();
    expect(problems).toEqual([]);
  }, 120_000);

  it('says "You are signed out" after Sign out, with how to sign in again, and the session is gone', async () => {
    const context = await browser.newContext();
    const page = watch(await context.newPage());
    await page.goto(await roster.loginLink());
    await expect.poll(() => new URL(page.url()).pathname).toBe('/agents');
    expect((await page.request.get(`${roster.address}/api/me`)).status()).toBe(200);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Signed out');
    const main = (await page.getByRole('main').textContent()) ?? '';
    expect(main).toContain('You are signed out. To sign in again:');
    expect(main).toContain('npx roster login-link');
    expect(main).not.toContain('code after the #');
    expect(await page.locator('header').getByRole('button', { name: 'Sign out' }).count()).toBe(0);
    expect((await page.request.get(`${roster.address}/api/me`)).status()).toBe(401);
    await shot(page, 'signed-out');
    await context.close();
    expect(problems).toEqual([]);
  }, 60_000);

  it('shows Bull Board to the owner from this server alone (no font or script from another origin), under a strict policy, with a way back to Roster', async () => {
    const context = await browser.newContext();
    const page = watch(await context.newPage());
    await page.goto(await roster.loginLink());
    await expect.poll(() => new URL(page.url()).pathname).toBe('/agents');
    requested.length = 0;
    page.setDefaultTimeout(20_000);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Queues', exact: true }).click();
    await expect.poll(() => new URL(page.url()).pathname).toMatch(/^\/admin\/queues/);
    // The board is drawn: its queues listed from its own API.
    await page.locator('header').getByText('Roster jobs', { exact: true }).waitFor();
    await page.locator('main').getByText('vacuum', { exact: true }).first().waitFor();
    await shot(page, 'bull-board');
    const own = new URL(roster.address).origin;
    expect(requested.filter((url) => url.startsWith(`${own}/admin/queues/api/`)).length).toBeGreaterThan(0);
    expect(requested.filter((url) => url.startsWith(`${own}/admin/queues/static/`)).length).toBeGreaterThan(0);
    expect(requested.filter((url) => new URL(url).origin !== own)).toEqual([]);
    // The way back: the board's menu has a link to the web page.
    await page.locator('header ul li').last().getByRole('button').click();
    await shot(page, 'bull-board-menu');
    await page.getByText('Back to Roster', { exact: true }).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe('/agents');
    await page.getByRole('heading', { level: 2, name: 'Your agents' }).waitFor();
    await context.close();
    expect(problems).toEqual([]);
  }, 60_000);
});
