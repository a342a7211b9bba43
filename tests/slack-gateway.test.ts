import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { until } from '@roster/channels/testing';
import { migrate, openEmbeddedDatabase } from '@roster/db';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeSlack } from '@roster/channel-slack/testing';
import { freePort, runRoster, startRoster, tempDataDir, type RunningRoster } from './support/roster-process.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

describe('Slack through roster start', () => {
  it('refuses a badly signed event and keeps nothing of it; a correction lands as a learning event for that agent and person only', async () => {
    const dir = tempDataDir();
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
    // Events over HTTP arrive on the server's own port, at /slack/events.
    const port = await freePort();
    const slack = await startFakeSlack({ eventsUrl: `http://127.0.0.1:${port}/slack/events` });
    cleanups.push(() => slack.close());
    const env = {
      ROSTER_DATA_DIR: dir,
      ROSTER_QUEUE_PREFIX: `test-${randomUUID()}`,
      PORT: String(port),
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_SIGNING_SECRET: slack.signingSecret,
      SLACK_API_URL: slack.apiUrl,
    };
    for (const args of [
      ['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'],
      ['agent', 'add', '--name', 'Coder', '--job', 'writes code'],
      ['person', 'add', 'Ada'],
      ['person', 'add', 'Bob'],
    ]) {
      const result = await runRoster(args, env);
      expect(result.code, result.stderr).toBe(0);
    }
    const roster: RunningRoster = startRoster(['start'], env);
    cleanups.push(() => roster.stop());
    await roster.waitForOutput(/running at/);
    await until(() => slack.calls.includes('auth.test'), 'the gateway to reach Slack', 20_000);

    const ada = slack.user(1);
    const dm = slack.dmChatId(ada);
    const sentToAda = () => slack.sent().filter((message) => message.chatId === dm).map((message) => message.text);
    const code = await runRoster(['person', 'link-code', 'Ada'], env);
    await slack.command(ada, 'dm', `link ${code.stdout.trim()}`);
    await until(() => sentToAda().length === 1, 'the answer to /roster link');
    expect(sentToAda()).toEqual(['Linked: you are Ada here now.']);
    await slack.command(ada, 'dm', 'agent Scout');
    await until(() => sentToAda().length === 2, 'the answer to /roster agent');

    // Signed with the wrong secret: refused, and nothing of it is kept.
    const forged = {
      type: 'message',
      channel: dm,
      channel_type: 'im',
      user: ada.id,
      text: "that's wrong, my pin is 9876",
      ts: '1700000500.000100',
      event_ts: '1700000500.000100',
    };
    expect((await slack.send({ body: slack.eventBody(forged), contentType: 'application/json', secret: 'not-the-secret' })).status).toBe(401);

    await slack.deliver({ chat: 'dm', from: ada, text: "that's wrong, my desk is on floor 4" });
    await until(() => sentToAda().length === 3, 'the answer to the correction');
    expect(sentToAda()[2]).toBe('Noted: your desk is on floor 4 (I found nothing like it to correct.)');

    expect(await roster.stop()).toBe(0);
    const database = await openEmbeddedDatabase(path.join(dir, 'pglite'));
    cleanups.push(() => database.close());
    await migrate(database);
    const kept = await database.adminScope('test: read what was kept', async (tx) => ({
      events: (
        await tx.query<{ event: string }>(
          `select a.name || '/' || p.name || '/' || e.kind || '/' || e.channel as event from learning_events e join agents a on a.id = e.agent_id join people p on p.id = e.person_id`,
        )
      ).rows.map((row) => row.event),
      forged: (await tx.query(`select 1 from messages where content like '%9876%'`)).rows.length,
    }));
    expect(kept).toEqual({ events: ['Scout/Ada/correction/slack'], forged: 0 });
  });
});
