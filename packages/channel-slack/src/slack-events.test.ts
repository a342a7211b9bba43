import { serveChannel, type ServedChannel } from '@roster/channel-host';
import { until } from '@roster/channels/testing';
import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { createApprovalDesk } from '@roster/learning';
import { createRuntime, type Runtime } from '@roster/runtime';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeSlack, type FakeSlack } from './fake-slack.js';
import { slackBlockLimit } from './slack-adapter.js';

describe('Slack events over HTTP, through the core', () => {
  let test: TestDatabase;
  let roster: Runtime;
  let slack: FakeSlack;
  let served: ServedChannel;

  beforeAll(async () => {
    test = await openTestDatabase();
    roster = await createRuntime({ config: parseConfig({}), database: test.database, key: testInstallationKey });
    for (const name of ['Scout', 'Coder']) await roster.core.directory.addAgent({ name, job: `the ${name} job` });
    for (const name of ['Ada', 'Bob']) await roster.core.directory.addPerson({ name });
    await roster.core.directory.bindChannel({ channel: 'slack', agent: 'Scout' });
  });
  afterAll(async () => {
    await test?.cleanup();
  });
  beforeEach(async () => {
    slack = await startFakeSlack();
    served = await serveChannel({ adapter: slack.adapter, core: roster.core });
  });
  afterEach(async () => {
    await served.stop();
    await slack.close();
  });

  const learningEvents = () =>
    test.database.adminScope('test: read learning events', async (tx) => {
      const { rows } = await tx.query<{ agent: string; person: string; kind: string; channel: string }>(
        `select a.name as agent, p.name as person, e.kind, e.channel from learning_events e join agents a on a.id = e.agent_id left join people p on p.id = e.person_id`,
      );
      return rows.map((row) => `${row.agent}/${row.person}/${row.kind}/${row.channel}`).sort();
    });
  const messageCount = () =>
    test.database.adminScope('test: count messages', async (tx) => Number((await tx.query<{ n: string }>('select count(*) as n from messages')).rows[0]!.n));

  it('records a correction sent on Slack as a learning event for that agent and that person only', async () => {
    const directory = roster.core.directory;
    const ada = slack.user(1);
    const bob = slack.user(2);
    await directory.linkIdentity((await directory.personByName('Ada')).id, 'slack', ada.id);
    await directory.linkIdentity((await directory.personByName('Bob')).id, 'slack', bob.id);
    const before = await learningEvents();

    await slack.deliver({ chat: 'dm', from: ada, text: "that's wrong, my desk is on floor 4" });
    await served.settled();
    expect(slack.sent().filter((message) => message.chatId === slack.dmChatId(ada)).map((message) => message.text)).toEqual([
      'Noted: your desk is on floor 4 (I found nothing like it to correct.)',
    ]);
    expect(await learningEvents()).toEqual([...before, 'Scout/Ada/correction/slack'].sort());
    // Bob's plain message on the same channel is no correction: nothing more is recorded.
    await slack.deliver({ chat: 'dm', from: bob, text: 'what do you know about my desk?' });
    await served.settled();
    expect(slack.sent().filter((message) => message.chatId === slack.dmChatId(bob)).map((message) => message.text)).toEqual([
      "I don't know anything about your desk yet.",
    ]);
    expect(await learningEvents()).toEqual([...before, 'Scout/Ada/correction/slack'].sort());
  });

  it('refuses a request with a bad signature or older than five minutes, and changes nothing', async () => {
    const ada = slack.user(3);
    await roster.core.directory.linkIdentity((await roster.core.directory.addPerson({ name: 'Cleo' })).id, 'slack', ada.id);
    const event = {
      type: 'message',
      channel: slack.dmChatId(ada),
      channel_type: 'im',
      user: ada.id,
      text: 'actually, my phone is the blue one',
      ts: '1700009999.000100',
      event_ts: '1700009999.000100',
    };
    const learned = await learningEvents();
    const messages = await messageCount();

    const forged = await slack.send({ body: slack.eventBody(event), contentType: 'application/json', secret: 'not-the-secret' });
    expect(forged.status).toBe(401);
    const stale = await slack.send({ body: slack.eventBody(event), contentType: 'application/json', timestamp: Math.floor(Date.now() / 1000) - 6 * 60 });
    expect(stale.status).toBe(401);
    const ahead = await slack.send({ body: slack.eventBody(event), contentType: 'application/json', timestamp: Math.floor(Date.now() / 1000) + 6 * 60 });
    expect(ahead.status).toBe(401);
    const unsigned = await fetch(slack.adapter.eventsUrl!, { method: 'POST', headers: { 'content-type': 'application/json' }, body: slack.eventBody(event) });
    expect(unsigned.status).toBe(401);
    await served.settled();
    expect(slack.sent()).toEqual([]);
    expect(await learningEvents()).toEqual(learned);
    expect(await messageCount()).toBe(messages);

    // The same event, signed as Slack signs it: taken, answered, recorded.
    expect((await slack.send({ body: slack.eventBody(event), contentType: 'application/json' })).status).toBe(200);
    await served.settled();
    expect(slack.sent().map((message) => message.text)).toEqual(['Noted: your phone is the blue one (I found nothing like it to correct.)']);
    expect(await learningEvents()).toEqual([...learned, 'Scout/Cleo/correction/slack'].sort());
    expect(await messageCount()).toBe(messages + 2);
  });

  it('answers URL verification with the challenge, and a signed one only', async () => {
    const body = JSON.stringify({ token: 'verification-token', challenge: 'c-3po', type: 'url_verification' });
    const answered = await slack.send({ body, contentType: 'application/json' });
    expect(answered.status).toBe(200);
    expect(answered.body).toContain('c-3po');
    expect((await slack.send({ body, contentType: 'application/json', secret: 'wrong' })).status).toBe(401);
  });

  it('answers a mention in its thread, a command in a channel to its sender alone, and never pings through an answer', async () => {
    const ada = slack.user(4);
    await roster.core.directory.linkIdentity((await roster.core.directory.addPerson({ name: 'Dora' })).id, 'slack', ada.id);
    const mention = await slack.deliver({ chat: 'group', from: ada, text: 'what do you know about lunch?', mentionBot: true });
    await served.settled();
    const [reply] = slack.sent();
    expect(reply).toMatchObject({ chatId: slack.groupChatId, threadId: mention.messageId, text: "I don't know anything about lunch yet." });
    expect(slack.sent()).toHaveLength(1);

    // An answer that carries Slack's mention syntax goes out escaped: it shows as text and pings nobody.
    await served.send({ chatId: slack.groupChatId, threadId: mention.messageId }, 'Tell <!channel> & <@U999> now');
    expect(slack.sent().at(-1)!.text).toBe('Tell <!channel> & <@U999> now');
    expect(slack.rawTexts().at(-1)).toBe('Tell &lt;!channel&gt; &amp; &lt;@U999&gt; now');

    await slack.command(ada, 'group', 'agents');
    await served.settled();
    expect(slack.sent().at(-1)).toMatchObject({ chatId: slack.groupChatId, visibleTo: ada.id });
    expect(slack.sent().at(-1)!.text).toContain('Scout — the Scout job (talking to it now)');
    expect(slack.calls).toContain('chat.postEphemeral');
  });

  it('pushes an approval longer than a Block Kit section in sections of at most 3,000 characters that carry the whole text', async () => {
    const directory = roster.core.directory;
    const owner = slack.user(5);
    await directory.linkIdentity((await directory.addPerson({ name: 'Olive', role: 'owner' })).id, 'slack', owner.id);
    const sentences: string[] = [];
    for (let index = 0; sentences.join(' ').length < 3800; index += 1) sentences.push(`Rule ${index}: cite two sources & say how each was checked.`);
    const text = sentences.join(' ');
    expect(text.length).toBeGreaterThan(slackBlockLimit);
    const scout = await directory.agentByName('Scout');
    const [approval] = await test.database.adminScope('test: propose a lesson', async (tx) =>
      (await tx.query<{ id: string }>(`insert into approvals (agent_id, text, proposed_by_kind, proposed_by) values ($1, $2, 'agent', 'Scout') returning id`, [scout.id, text])).rows,
    );
    // A Slack of its own, served with the approval desk (the one the other cases share has none).
    await served.stop();
    await slack.close();
    slack = await startFakeSlack();
    served = await serveChannel({ adapter: slack.adapter, core: roster.core, approvals: createApprovalDesk(test.database, roster.memory.audit, directory), approvalPollMs: 60_000 });
    await until(() => slack.sent().some((message) => message.buttons.length > 0), 'the approval to reach the owner');

    const at = slack.sent().findIndex((message) => message.buttons.length > 0);
    expect(slack.sent()[at]).toMatchObject({ chatId: slack.dmChatId(owner), buttons: [{ approvalId: approval!.id, decision: 'approve' }, { approvalId: approval!.id, decision: 'reject' }] });
    const blocks = slack.rawBlocks()[at] as Array<{ type: string; text?: { type: string; text: string } }>;
    const sections = blocks.filter((block) => block.type === 'section');
    expect(sections.length).toBe(2);
    for (const section of sections) {
      // Plain text: shown exactly as written, & included.
      expect(section.text!.type).toBe('plain_text');
      expect(section.text!.text.length).toBeLessThanOrEqual(slackBlockLimit);
      expect(section.text!.text).toMatch(/checked\.$/);
    }
    // Cut at a sentence end, only the space there dropped: the whole text, in order, after what it is.
    const whole = `Scout proposes a lesson, to ride in every prompt it gets from now on:\n\n${text}`;
    expect(sections.map((section) => section.text!.text).join(' ')).toBe(whole);
    expect(blocks.at(-1)).toMatchObject({ type: 'actions' });
    // The notification's text is the whole approval too, escaped for mrkdwn.
    expect(slack.rawTexts()[at]).toBe(whole.replaceAll('&', '&amp;'));
  });
});
