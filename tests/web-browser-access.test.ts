import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { browser, expectOwnOriginOnly, open, problems, requested, roster, say, shot, talkTo, unlabelledControls, useWebBrowser, watch } from './support/web-browser.js';

/** The web page in a real browser: links, members, the team, tombstones, limits, signing out and Bull Board. */
useWebBrowser();

describe('the web page in a browser, for each kind of visitor', () => {
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
