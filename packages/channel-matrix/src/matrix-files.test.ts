import { tooLargeText } from '@roster/channels';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeMatrix, type FakeMatrix } from './fake-matrix.js';
import { startTestRoster, type TestRoster } from './test-roster.js';

/** Files people send: fetched from the homeserver's media API with the bot's token, at most 10 MB. */
describe('Matrix files', () => {
  let roster: TestRoster;
  let fake: FakeMatrix;

  beforeAll(async () => {
    roster = await startTestRoster();
  });
  afterAll(async () => {
    await roster?.cleanup();
  });
  beforeEach(async () => {
    fake = await startFakeMatrix();
  });
  afterEach(async () => {
    expect(fake.unknownRequests()).toEqual([]);
    await fake.close();
  });

  const downloads = (): string[] => fake.requests().filter((request) => request.includes('/media/'));

  it('fetches a linked person’s image from the authenticated media API, and refuses one over 10 MB before fetching it', async () => {
    const served = await roster.serve(fake.adapter);
    const person = fake.user(1);
    await roster.link(person);
    const room = fake.dmChatId(person);
    await fake.deliver({ chat: 'dm', from: person, text: 'what is on this picture?', image: true });
    await served.settled();
    expect(downloads()).toEqual(['GET /_matrix/client/v1/media/download/roster.test/media1']);
    // The offline engine reads no images, and says so: the image and its caption reached it.
    const answers = fake.sent().filter((message) => message.chatId === room).map((message) => message.text);
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatch(/^I cannot read images here/);

    await fake.say(room, person, {
      msgtype: 'm.image',
      body: 'huge.png',
      url: 'mxc://roster.test/huge',
      info: { mimetype: 'image/png', size: 11 * 1024 * 1024 },
      'm.mentions': {},
    });
    await served.settled();
    expect(fake.sent().at(-1)!.text).toBe(tooLargeText('image'));
    expect(downloads()).toHaveLength(1);
  });
});
