import type { ChannelHost, ChannelShard } from '@roster/contracts';
import { defaultAccount, type ChannelState } from './settings.js';

/**
 * What one lease covers: a whole bot account, or one part of it (Discord's
 * gateway shard `id` of `count`), held by one gateway.
 */
export interface Unit {
  /** How this gateway names it in its maps and logs: the channel, or `discord shard 1/2`. */
  key: string;
  channel: string;
  /** The lease's account: `default`, or `default shard 1/2`. */
  account: string;
  shard?: ChannelShard;
}

/** The units of a channel whose account is received in `count` parts (one part: the whole account, as before shards). */
export function unitsOf(channel: string, count: number): Unit[] {
  if (count <= 1) return [{ key: channel, channel, account: defaultAccount }];
  return Array.from({ length: count }, (_, id) => {
    const part = `shard ${id}/${count}`;
    return { key: `${channel} ${part}`, channel, account: `${defaultAccount} ${part}`, shard: { id, count } };
  });
}

/**
 * How many parts each configured channel's account is received in, asked of
 * its plugin (Discord's `GET /gateway/bot`, or DISCORD_SHARDS) once per
 * settings: the count stays while the settings do.
 */
export function createShardCounts(host: ChannelHost) {
  const known = new Map<string, { settings: string; count: number }>();
  return {
    async count(state: ChannelState, settings: string): Promise<number> {
      if (state.setup.state !== 'configured' || state.plugin.shards === undefined) return 1;
      const cached = known.get(state.channel);
      if (cached !== undefined && cached.settings === settings) return cached.count;
      const count = await state.plugin.shards(state.setup.settings, host);
      known.set(state.channel, { settings, count });
      return count;
    },
  };
}

/** The parts one of `gateways` takes of `count`: an even split, rounded up, so that every part has a taker. */
export function fairShare(count: number, gateways: number): number {
  return Math.ceil(count / Math.max(1, gateways));
}
