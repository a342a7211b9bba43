import { serveChannel } from '@roster/channels';
import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { openTestDatabase } from '@roster/db/testing';
import { createRuntime } from '@roster/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeSlack } from '../packages/channel-slack/src/fake-slack.js';
import { startFakeOpenAi } from './support/fake-openai.js';

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
    const model = await startFakeOpenAi(() => ({ text: markdown }));
    cleanups.push(() => model.close());
    const test = await openTestDatabase();
    cleanups.push(() => test.cleanup());
    const runtime = await createRuntime({ config: parseConfig({}), database: test.database, key: testInstallationKey });
    const { directory } = runtime.core;
    await directory.addAgent({ name: 'Writer', job: 'writes plans', engine: model.engine });
    const person = await directory.addPerson({ name: 'Pia' });
    const slack = await startFakeSlack();
    cleanups.push(() => slack.close());
    const user = slack.user(1);
    await directory.linkIdentity(person.id, 'slack', user.id, user.name);
    const served = await serveChannel({ adapter: slack.adapter, core: runtime.core, streaming: false });
    cleanups.push(() => served.stop());

    await slack.deliver({ chat: 'dm', from: user, text: 'what is the plan?' });
    await served.settled();
    expect(slack.rawTexts()).toEqual([mrkdwn]);
    expect(slack.sent().map((message) => message.chatId)).toEqual([slack.dmChatId(user)]);
    // The reply is kept as the model wrote it: the conversion is Slack's alone.
    const kept = await test.database.adminScope('test: read the reply', async (tx) => (await tx.query<{ content: string }>(`select content from messages where role = 'agent'`)).rows);
    expect(kept.map((row) => row.content)).toEqual([markdown]);
  });
});
