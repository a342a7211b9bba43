import { serveChannel, type ServedChannel } from '@roster/channel-host';
import { until } from '@roster/channels/testing';
import { parseConfig } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { createRuntime, type Runtime } from '@roster/runtime';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeSlack, type FakeSlack } from './fake-slack.js';
import { createSlackAdapter } from './slack-adapter.js';

describe('Slack in Socket Mode, through the core', () => {
  let test: TestDatabase;
  let roster: Runtime;
  let slack: FakeSlack;
  let served: ServedChannel | undefined;

  beforeAll(async () => {
    test = await openTestDatabase();
    roster = await createRuntime({ config: parseConfig({}), database: test.database, key: testInstallationKey });
    await roster.core.directory.addAgent({ name: 'Scout', job: 'finds and checks sources' });
  });
  afterAll(async () => {
    await test?.cleanup();
  });
  afterEach(async () => {
    await served?.stop();
    await slack.close();
  });

  it('takes events and commands over the socket, acknowledges each, and answers through the Web API', async () => {
    slack = await startFakeSlack();
    const adapter = createSlackAdapter({ botToken: slack.botToken, appToken: slack.appToken, apiUrl: slack.apiUrl });
    expect(adapter.mode).toBe('socket');
    served = await serveChannel({ adapter, core: roster.core });
    await until(() => slack.socketConnections() === 1, 'the Socket Mode connection');
    const ada = slack.user(1);
    await roster.core.directory.linkIdentity((await roster.core.directory.addPerson({ name: 'Ada' })).id, 'slack', ada.id);

    // A one-to-one message, as an events_api envelope.
    const event = JSON.parse(
      slack.eventBody({ type: 'message', channel: slack.dmChatId(ada), channel_type: 'im', user: ada.id, text: 'remember that my desk is on floor 3', ts: '1700000001.000100' }),
    ) as Record<string, unknown>;
    // serveChannel resolved once Slack said hello on the socket: the envelope is taken and acknowledged.
    expect(await slack.sendEnvelope('events_api', event)).toHaveProperty('envelope_id');
    await served.settled();
    await until(() => slack.sent().length === 1, 'the answer');
    expect(slack.sent()[0]).toMatchObject({ chatId: slack.dmChatId(ada), text: 'Noted: your desk is on floor 3' });

    // /roster memory, as a slash_commands envelope.
    const ack = await slack.sendEnvelope('slash_commands', {
      team_id: 'T0TEAM',
      channel_id: slack.dmChatId(ada),
      user_id: ada.id,
      user_name: ada.name,
      command: '/roster',
      text: 'memory',
      trigger_id: '1.socket.trigger',
      response_url: `${slack.apiUrl}../respond/1`,
      api_app_id: 'A0ROSTER',
    });
    expect(ack).toHaveProperty('envelope_id');
    await until(() => slack.sent().length === 2, 'the answer to /roster memory');
    expect(slack.sent()[1]!.text).toBe('What Scout knows about you:\n- my desk is on floor 3');
  });

  it('refuses to start with an app token Slack does not take, saying so', async () => {
    slack = await startFakeSlack();
    const adapter = createSlackAdapter({ botToken: slack.botToken, appToken: 'xapp-wrong', apiUrl: slack.apiUrl });
    await expect(serveChannel({ adapter, core: roster.core })).rejects.toThrow();
    expect(slack.socketConnections()).toBe(0);
  });
});
