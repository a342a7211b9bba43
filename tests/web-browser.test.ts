import { WhatsAppSession } from '@roster/channel-whatsapp';
import { testInstallationKey } from '@roster/config/testing';
import { createLinkedDeviceStore } from '@roster/gateway';
import { mirrorReport } from '@roster/learning';
import { describe, expect, it } from 'vitest';
import { browser, day, expectOwnOriginOnly, open, problems, roster, say, shot, unlabelledControls, useWebBrowser, watch } from './support/web-browser.js';

/** The web page in a real browser, as its owner first uses it; the other walks are in web-browser-access.test.ts. */
useWebBrowser();

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
    await new WhatsAppSession(createLinkedDeviceStore(roster.database, 'whatsapp', 'default'), testInstallationKey).showQr('https://wa.me/settings/linked_devices#2@ref,bm9pc2U=,aWQ=,YWR2,1');
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

});
