import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { until } from '@roster/channels/testing';
import { startFakeTelegram, type FakeTelegram } from '@roster/channel-telegram/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeOpenAi, type FakeRequest } from './support/fake-openai.js';
import { endRoster, freePort, runRoster, startRoster, tempDataDir, type RunningRoster } from './support/roster-process.js';

/**
 * What a gateway took from Telegram and had not answered when it went away.
 * Telegram counts the updates of one poll delivered when the next poll asks
 * past them, and never hands them out again: a gateway stopped or killed
 * after that and before it answered used to lose them. Here the model holds
 * every answer until the gateway is gone, so each message is taken and
 * confirmed (the control: the stand-in will not send it again) and none is
 * answered; the standby that takes the bot over must answer each, once.
 */

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const lastWords = (request: FakeRequest) => request.parts.map((part) => String(part.text ?? '')).join('');
const parcels = ['parcel 1', 'parcel 2', 'parcel 3', 'parcel 4', 'parcel 5'];

/** Two gateways on one data folder, Ada linked through the first, and a model that holds its answers about parcels until `letGo`. */
async function twoGateways() {
  let letGo: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (letGo = resolve));
  const model = await startFakeOpenAi(async (request) => {
    if (parcels.includes(lastWords(request))) await held;
    return { text: `Heard: ${lastWords(request)}` };
  });
  cleanups.push(() => model.close());
  const dir = tempDataDir();
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
  const fake = await startFakeTelegram();
  cleanups.push(() => fake.close());
  const env = { ROSTER_DATA_DIR: dir, ROSTER_QUEUE_PREFIX: `test-${randomUUID()}`, TELEGRAM_BOT_TOKEN: fake.token, TELEGRAM_API_ROOT: fake.apiRoot, LOG_LEVEL: 'info' };
  const added = await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'keeps notes', '--engine', model.engine], env);
  expect(added.code, added.stderr).toBe(0);
  expect((await runRoster(['person', 'add', 'Ada'], env)).code).toBe(0);
  const gateway = async () => {
    const started = startRoster(['gateway'], { ...env, GATEWAY_PORT: String(await freePort()) });
    cleanups.push(() => endRoster(started));
    await started.waitForOutput(/gateway is running/);
    return started;
  };
  const holder = await gateway();
  await until(() => /serving the bot account/.test(holder.output().stderr), 'the first gateway to serve the bot', 60_000);
  const ada = fake.user(2);
  const code = await runRoster(['person', 'link-code', 'Ada'], env);
  await fake.command(ada, 'dm', `link ${code.stdout.trim()}`);
  await until(() => fake.sent().some((message) => message.text === 'Linked: you are Ada here now.'), 'Ada’s link', 120_000);
  const standby = await gateway();
  return { model, fake, holder, standby, chatId: fake.dmChatId(ada), ada, letGo };
}

/** Wait for `check`; when it never holds, fail with what the gateways logged. */
async function awaitAnswers(setup: Awaited<ReturnType<typeof twoGateways>>, check: () => boolean, what: string): Promise<void> {
  await until(check, what, 180_000).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}\nsent: ${JSON.stringify(setup.fake.sent())}\nthe holder said:\n${setup.holder.output().stderr}\nthe standby said:\n${setup.standby.output().stderr}`);
  });
}

/** What the bot said in Ada's chat in answer to the parcels, in order. */
function heard(fake: FakeTelegram, chatId: string): string[] {
  return fake.sent().filter((message) => message.chatId === chatId && message.text.startsWith('Heard: ')).map((message) => message.text);
}

/** Send the five parcels; each resolves once Telegram counts it delivered (the next poll asked past it). */
async function sendParcels(setup: Awaited<ReturnType<typeof twoGateways>>): Promise<void> {
  for (const text of parcels) await setup.fake.deliver({ chat: 'dm', from: setup.ada, text });
  await until(() => setup.model.requests.some((request) => lastWords(request) === 'parcel 1'), 'the model to be asked about the first parcel', 60_000);
}

function serving(gateway: RunningRoster): boolean {
  return /took over the bot account|serving the bot account/.test(gateway.output().stderr);
}

describe('messages a gateway took and did not answer', () => {
  it('kill -9 of the holder after Telegram confirmed five messages it had not answered: the standby answers each, once, in order', { timeout: 240_000 }, async () => {
    const setup = await twoGateways();
    expect(serving(setup.standby)).toBe(false);
    await sendParcels(setup);
    // The control: Telegram has them as delivered, and nobody has answered them.
    expect(heard(setup.fake, setup.chatId)).toEqual([]);

    setup.holder.child.kill('SIGKILL');
    await new Promise((resolve) => setup.holder.child.once('exit', resolve));
    setup.letGo();
    await awaitAnswers(setup, () => heard(setup.fake, setup.chatId).length >= parcels.length, 'the standby to answer the five parcels');
    expect(heard(setup.fake, setup.chatId)).toEqual(parcels.map((text) => `Heard: ${text}`));
    expect(setup.standby.output().stderr).toMatch(/answering the messages the account’s last holder took and did not answer/);
  });

  it('a stop whose answers outlast its 15 s: the turns cut short say nothing, and the gateway that takes the bot over answers each, once, in order', { timeout: 240_000 }, async () => {
    const setup = await twoGateways();
    await sendParcels(setup);
    expect(await setup.holder.stop()).toBe(0);
    // The control: the stopped gateway answered none of them (its model held every answer), and Telegram will not send them again.
    expect(heard(setup.fake, setup.chatId)).toEqual([]);
    expect(setup.fake.sent().filter((message) => message.chatId === setup.chatId).map((message) => message.text)).toEqual(['Linked: you are Ada here now.']);

    setup.letGo();
    await awaitAnswers(setup, () => heard(setup.fake, setup.chatId).length >= parcels.length, 'the gateway that took over to answer the five parcels');
    expect(heard(setup.fake, setup.chatId)).toEqual(parcels.map((text) => `Heard: ${text}`));
    expect(serving(setup.standby)).toBe(true);
  });
});
