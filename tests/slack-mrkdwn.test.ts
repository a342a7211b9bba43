import { afterEach, describe, expect, it } from 'vitest';
import { startFakeSlack } from '@roster/channel-slack/testing';
import { startChannelRoster } from './support/channel-roster.js';

/**
 * A model answers in Markdown; Slack reads mrkdwn. The reply goes from a
 * local fake of the OpenAI API through the core and the Slack adapter to a
 * local fake of Slack's Web API, which records the text as it arrives.
 */
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const markdown = [
  '## The plan',
  '**Two** steps, *carefully*:',
  '- run `npm ci && npm test -- <fast>`',
  '- read [the guide](https://example.com/guide?a=1&b=2)',
  '```sh',
  'npm run build > out.log',
  '```',
  '~~Skip the rest~~ & tell <!channel> nothing.',
].join('\n');

const mrkdwn = [
  '*The plan*',
  '*Two* steps, _carefully_:',
  '- run `npm ci &amp;&amp; npm test -- &lt;fast&gt;`',
  '- read <https://example.com/guide?a=1&amp;b=2|the guide>',
  '```',
  'npm run build &gt; out.log',
  '```',
  '~Skip the rest~ &amp; tell &lt;!channel&gt; nothing.',
].join('\n');

describe('a Markdown reply on Slack', () => {
  it('arrives at Slack in mrkdwn, escaped, with the link made from Markdown the only <…>', async () => {
    const slack = await startFakeSlack();
    cleanups.push(() => slack.close());
    const { test, user, served, cleanup } = await startChannelRoster(slack, { answer: { text: markdown }, streaming: false });
    cleanups.push(cleanup);

    await slack.deliver({ chat: 'dm', from: user, text: 'what is the plan?' });
    await served.settled();
    expect(slack.rawTexts()).toEqual([mrkdwn]);
    expect(slack.sent().map((message) => message.chatId)).toEqual([slack.dmChatId(user)]);
    // The reply is kept as the model wrote it: the conversion is Slack's alone.
    const kept = await test.database.adminScope('test: read the reply', async (tx) => (await tx.query<{ content: string }>(`select content from messages where role = 'agent'`)).rows);
    expect(kept.map((row) => row.content)).toEqual([markdown]);
  });
});
