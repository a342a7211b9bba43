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
      [['channel', 'add', 'fax'], /A channel is one of telegram, slack, discord, whatsapp, got "fax"/],
      [['channel', 'add', 'telegram', '--policy', 'everyone'], /--policy is one of pairing, allowlist, open, got "everyone"/],
      [['channel', 'add', 'telegram', '--allow', '5000001'], /--allow lists handles for --policy allowlist only/],
      [['channel', 'add', 'telegram', '--token', 'x'], /Unknown option '--token'/],
    ] as const) {
      const refused = await runRoster([...args], env);
      expect(refused.code, args.join(' ')).toBe(2);
      expect(refused.stderr).toMatch(message);
    }

    const added = await runRoster(['channel', 'add', 'telegram', '--agent', 'scout', '--policy', 'allowlist', '--allow', '5000001', '--allow', '5000002'], env);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toBe('Bound telegram → Scout; answers linked people and 5000001, 5000002.\n');
    expect(added.stderr).toMatch(/telegram is not configured \(set TELEGRAM_BOT_TOKEN\)/);
    // Only what was added: the refused commands before it left nothing.
    expect(await bindings()).toEqual([{ channel: 'telegram', account: 'default', agent: 'Scout', policy: 'allowlist', allowlist: ['5000001', '5000002'] }]);
    // Adding again replaces it.
    const replaced = await runRoster(['channel', 'add', 'telegram', '--policy', 'open', '--json'], env);
    expect(JSON.parse(replaced.stdout)).toEqual({ channel: 'telegram', account: 'default', agent: null, policy: 'open', allowlist: [] });

    const removed = await runRoster(['channel', 'remove', 'telegram'], env);
    expect(removed.code).toBe(0);
    const again = await runRoster(['channel', 'remove', 'telegram'], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/telegram has no binding; nothing changed/);
  });
});
