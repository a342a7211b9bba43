import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { runRoster, tempDataDir } from './support/roster-process.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

function dataDir(): string {
  const dir = tempDataDir();
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('roster channel', () => {
  it('binds a channel to an agent with a policy, lists it, and removes it; bad input changes nothing', async () => {
    const dir = dataDir();
    const env = { ROSTER_DATA_DIR: dir };
    expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env)).code).toBe(0);
    const list = async () => JSON.parse((await runRoster(['channel', 'list', '--json'], env)).stdout) as Array<{ channel: string; bindings: unknown[] }>;
    const bindings = async () => (await list()).flatMap((entry) => entry.bindings);

    for (const [args, message] of [
      [['channel', 'add', 'fax'], /A channel is one of discord, matrix, slack, telegram, whatsapp, got "fax"/],
      [['channel', 'add', 'telegram', '--policy', 'everyone'], /--policy is one of pairing, allowlist, open, got "everyone"/],
      [['channel', 'add', 'telegram', '--allow', '5000001'], /--allow lists handles for --policy allowlist only/],
      [['channel', 'add', 'slack', '--token', 'x'], /slack takes --bot-token, --signing-secret, --app-token, not --token/],
      [['channel', 'add', 'whatsapp', '--token', 'x'], /whatsapp takes no token option, not --token/],
      [['channel', 'add', 'telegram', '--account', 'second', '--token', '1:abc'], /one bot per channel/],
    ] as const) {
      const refused = await runRoster([...args], env);
      expect(refused.code, args.join(' ')).toBe(2);
      expect(refused.stderr).toMatch(message);
    }

    const added = await runRoster(['channel', 'add', 'telegram', '--agent', 'scout', '--policy', 'allowlist', '--allow', '5000001', '--allow', '5000002'], env);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toBe('Bound telegram → Scout; answers linked people and 5000001, 5000002.\n');
    expect(added.stderr).toMatch(/telegram is not configured \(set TELEGRAM_BOT_TOKEN or run roster channel add telegram\)/);
    // Only what was added: the refused commands before it left nothing.
    expect(await bindings()).toEqual([{ channel: 'telegram', account: 'default', agent: 'Scout', policy: 'allowlist', allowlist: ['5000001', '5000002'], boundChannels: [] }]);
    // Adding again replaces it.
    const replaced = await runRoster(['channel', 'add', 'telegram', '--policy', 'open', '--json'], env);
    expect(JSON.parse(replaced.stdout)).toEqual({ channel: 'telegram', account: 'default', agent: null, policy: 'open', allowlist: [], boundChannels: [] });

    const removed = await runRoster(['channel', 'remove', 'telegram'], env);
    expect(removed.code).toBe(0);
    const again = await runRoster(['channel', 'remove', 'telegram'], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/telegram has no binding and no stored token; nothing changed/);
  });

  it('binds Discord server channels where every message is for the bot, keeping the binding’s agent; a wrong id changes nothing', async () => {
    const dir = dataDir();
    const env = { ROSTER_DATA_DIR: dir };
    expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env)).code).toBe(0);
    const discord = async (extra: Record<string, string> = {}) => {
      const listed = JSON.parse((await runRoster(['channel', 'list', '--json'], { ...env, ...extra })).stdout) as Array<{ channel: string; configured: boolean; bindings: Array<Record<string, unknown>> }>;
      return listed.find((entry) => entry.channel === 'discord')!;
    };
    expect((await runRoster(['channel', 'add', 'discord', '--agent', 'Scout'], env)).code).toBe(0);
    const [general, projects, support] = ['1234567890123456789', '2345678901234567890', '34567890123456789'];

    for (const [args, message] of [
      [['channel', 'add', 'discord', '--channel', 'general'], /--channel: A Discord channel id is 17 to 20 digits .*got "general"/],
      // With a token: the wrong id is found before the token is stored.
      [['channel', 'add', 'discord', '--token', 'MTA.fake.discord-token', '--channel', `${general},12345`], /got "12345"/],
      [['channel', 'add', 'discord', '--channel', ','], /--channel takes Discord server channels by id/],
      [['channel', 'add', 'telegram', '--channel', general], /telegram takes --token, not --channel/],
      [['channel', 'add', 'discord', '--account', 'second', '--channel', general], /give --channel without --account/],
    ] as const) {
      const refused = await runRoster([...args], env);
      expect(refused.code, args.join(' ')).toBe(2);
      expect(refused.stderr).toMatch(message);
    }
    // Nothing changed: no token stored, the binding as it was.
    expect(await discord()).toMatchObject({ configured: false, bindings: [{ agent: 'Scout', policy: 'pairing', boundChannels: [] }] });

    // Repeated and as a comma list; the agent stays.
    const bound = await runRoster(['channel', 'add', 'discord', '--channel', general, '--channel', `${projects}, ${support}`], env);
    expect(bound.code, bound.stderr).toBe(0);
    expect(bound.stdout).toBe(`Bound discord → Scout; answers linked people only (strangers get the pairing hint); in server channels ${general}, ${projects}, ${support} without a mention.\n`);
    expect((await discord()).bindings).toEqual([{ channel: 'discord', account: 'default', agent: 'Scout', policy: 'pairing', allowlist: [], boundChannels: [general, projects, support] }]);
    // Binding again (another policy) keeps them; --channel again replaces them.
    expect((await runRoster(['channel', 'add', 'discord', '--agent', 'Scout', '--policy', 'open'], env)).code).toBe(0);
    expect((await discord()).bindings).toMatchObject([{ policy: 'open', boundChannels: [general, projects, support] }]);
    expect((await runRoster(['channel', 'add', 'discord', '--channel', projects], env)).code).toBe(0);
    expect((await discord()).bindings).toMatchObject([{ agent: 'Scout', policy: 'open', boundChannels: [projects] }]);
    // DISCORD_CHANNELS, when set, wins: the list says which are served.
    const listed = await runRoster(['channel', 'list'], { ...env, DISCORD_CHANNELS: general });
    expect(listed.stdout).toContain(`discord → Scout; answers anyone (strangers as guests: no memory, no tools); in server channels ${general} (DISCORD_CHANNELS) without a mention`);
    // none clears them.
    const cleared = await runRoster(['channel', 'add', 'discord', '--channel', 'none'], env);
    expect(cleared.stdout).toBe('Bound discord → Scout; answers anyone (strangers as guests: no memory, no tools).\n');
    expect((await discord()).bindings).toMatchObject([{ boundChannels: [] }]);
  });

  it('stores a Slack bot token and signing secret and binds it: channel list says configured, and neither is ever printed', async () => {
    const dir = dataDir();
    const env = { ROSTER_DATA_DIR: dir };
    const agent = await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env);
    expect(agent.code, agent.stderr).toBe(0);
    const botToken = `xoxb-1234567890-0987654321-${'Sl4ck'.repeat(5)}`;
    const signingSecret = `8f0c1d2e${'a7'.repeat(12)}`;

    const added = await runRoster(['channel', 'add', 'slack', '--bot-token', botToken, '--signing-secret', signingSecret, '--agent', 'Scout'], env);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stderr).toMatch(/Stored the bot token and the signing secret \(events over HTTP\) for slack, sealed with the installation key/);
    expect(added.stdout).toBe('Bound slack → Scout; answers linked people only (strangers get the pairing hint).\n');
    // Both are there, so no word that something is missing.
    expect(added.stderr).not.toMatch(/slack (is )?(not configured|has a bot token but needs)/);

    const json = await runRoster(['channel', 'list', '--json'], env);
    const listed = JSON.parse(json.stdout) as Array<{ channel: string; configured: boolean; detail: string; bindings: unknown[] }>;
    expect(listed.find((entry) => entry.channel === 'slack')).toMatchObject({
      configured: true,
      detail: 'configured',
      bindings: [{ channel: 'slack', account: 'default', agent: 'Scout', policy: 'pairing', allowlist: [] }],
    });
    // The control beside it: a channel given nothing is not configured.
    expect(listed.find((entry) => entry.channel === 'telegram')).toMatchObject({ configured: false, bindings: [] });
    const text = await runRoster(['channel', 'list'], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^slack\s+configured\n\s+receiving: events over HTTP at \S+: every running server receives it\n\s+slack → Scout; answers linked people only \(strangers get the pairing hint\)$/m);

    for (const result of [added, json, text]) {
      expect(result.stdout + result.stderr).not.toContain(botToken);
      expect(result.stdout + result.stderr).not.toContain(botToken.slice(5, 25));
      expect(result.stdout + result.stderr).not.toContain(signingSecret);
    }
  });

  it('stores a token sealed with the installation key, write only: never printed, not in the data folder’s bytes, and a wrong one changes nothing', async () => {
    const dir = dataDir();
    const env = { ROSTER_DATA_DIR: dir };
    expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env)).code).toBe(0);
    const token = `424242:AAH-${'q'.repeat(12)}-roster-token-sealed`;
    const list = async () => JSON.parse((await runRoster(['channel', 'list', '--json'], env)).stdout) as Array<{ channel: string; configured: boolean; detail: string; bindings: unknown[] }>;
    const telegram = async () => (await list()).find((entry) => entry.channel === 'telegram')!;
    expect((await telegram()).configured).toBe(false);

    // A Slack bot token that is not one is refused, and nothing is stored or bound.
    const wrong = await runRoster(['channel', 'add', 'slack', '--bot-token', 'not-a-bot-token', '--agent', 'Scout'], env);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toMatch(/slack bot_token should start with xoxb-/);
    expect(wrong.stderr).not.toContain('not-a-bot-token');
    expect((await list()).find((entry) => entry.channel === 'slack')).toMatchObject({ configured: false, bindings: [] });

    // Read from standard input, so it never appears in the arguments.
    const stored = await runRoster(['channel', 'add', 'telegram', '--token', '-'], env, 60_000, `${token}\n`);
    expect(stored.code, stored.stderr).toBe(0);
    expect(stored.stderr).toMatch(/Stored the bot token from @BotFather for telegram, sealed with the installation key/);
    expect(stored.stdout).toMatch(/telegram: no binding/);
    expect(await telegram()).toMatchObject({ configured: true, detail: 'configured', bindings: [] });
    // A token alone keeps the binding: bind, then replace the token.
    expect((await runRoster(['channel', 'add', 'telegram', '--agent', 'Scout'], env)).code).toBe(0);
    const replaced = await runRoster(['channel', 'add', 'telegram', '--token', `${token}2`], env);
    expect(replaced.stdout).toBe('Kept telegram → Scout; answers linked people only (strangers get the pairing hint).\n');

    const everything = [stored, replaced, await runRoster(['channel', 'list'], env), await runRoster(['doctor', '--json'], { ...env, TELEGRAM_API_ROOT: 'http://127.0.0.1:9' })];
    for (const result of everything) expect(result.stdout + result.stderr).not.toContain(token);
    // The data folder's bytes (database files, WAL) hold no copy of the token in clear.
    const files = (fs.readdirSync(dir, { recursive: true }) as string[]).map((name) => `${dir}/${name}`).filter((file) => fs.statSync(file).isFile());
    // Positive control: the scan reads the database's bytes (the job sentence is there in clear).
    expect(files.filter((file) => fs.readFileSync(file).includes(Buffer.from('finds and checks sources'))).length).toBeGreaterThan(0);
    const holding = files.filter((file) => fs.readFileSync(file).includes(Buffer.from(token.slice(0, 20))));
    expect(holding).toEqual([]);

    // Removing the channel removes its binding and its stored token.
    const removed = await runRoster(['channel', 'remove', 'telegram'], env);
    expect(removed.stdout).toMatch(/Removed the telegram binding[\s\S]*Removed the stored token of telegram: a running gateway stops serving it within seconds/);
    expect((await telegram()).configured).toBe(false);
  });
});
