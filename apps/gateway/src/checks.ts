import type { InstallationKey, Logger } from '@roster/config';
import type { ChannelHost } from '@roster/contracts';
import type { Database } from '@roster/db';
import { describeAccounts } from './accounts.js';
import { createLinkedDeviceStore } from './linked-devices.js';
import { channelStates, type ChannelConfig, type StoredSettings } from './settings.js';

/** A channel as `roster doctor` reports it. */
export interface ChannelCheck {
  channel: string;
  status: 'ok' | 'fail' | 'off';
  detail: string;
}

/**
 * What a plugin is given: the logger, secrets derived from the installation
 * key, the services of this process, and, where a database is open, a
 * linked device's session in it. Never the database itself.
 */
export function channelHost(options: { logger: Logger; key?: InstallationKey; database?: Database; services?: Readonly<Record<string, unknown>> }): ChannelHost {
  const { key, database } = options;
  return {
    logger: options.logger,
    derive: (purpose) => {
      if (key === undefined) throw new Error('The installation key could not be loaded: roster doctor says why.');
      return key.derive(purpose);
    },
    services: { ...(key === undefined ? {} : { key }), ...options.services },
    ...(database === undefined ? {} : { linkedDevice: (channel: string, account: string) => createLinkedDeviceStore(database, channel, account) }),
  };
}

/**
 * Each registered channel checked against its platform (its plugin's
 * `check`: a token tried, a link read), called ok only when the platform
 * takes it and, for an account one gateway holds at a time, while a
 * gateway receives it (a bot nobody receives fails, with why); one that is
 * not configured is `off`, one half configured `fail`.
 */
export async function checkChannels(
  config: ChannelConfig,
  options: { stored?: StoredSettings; timeoutMs?: number; database?: Database; key?: InstallationKey; logger: Logger },
): Promise<ChannelCheck[]> {
  const host = channelHost({ logger: options.logger, ...(options.key === undefined ? {} : { key: options.key }), ...(options.database === undefined ? {} : { database: options.database }) });
  return Promise.all(
    channelStates(config, options.stored).map(async (state): Promise<ChannelCheck> => {
      const { channel, plugin, setup } = state;
      if (setup.state === 'off') return { channel, status: 'off', detail: setup.detail };
      if (setup.state === 'incomplete') return { channel, status: 'fail', detail: setup.detail };
      const check = await plugin.check(setup.settings, host, options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }).catch((error: unknown) => ({
        status: 'fail' as const,
        detail: (error as Error).message,
      }));
      if (check.status !== 'ok') return { channel, status: check.status, detail: check.detail };
      const done = `${check.detail}${setup.mode === undefined ? '' : `; ${setup.mode}`}`;
      if (options.database === undefined || setup.exclusive === false) return { channel, status: 'ok', detail: done };
      // A token the platform takes is not a bot that answers: ok only while a gateway receives it (each of its shards, where it has them).
      const accounts: Array<{ account: string; state: string; detail: string }> = await describeAccounts(options.database, [state]).catch((error: unknown) => [
        { account: 'default', state: 'failing', detail: `who receives it could not be read: ${(error as Error).message}` },
      ]);
      const said = accounts.length <= 1 ? (accounts[0]?.detail ?? 'nobody receives it') : accounts.map((entry) => `${entry.account.replace(/^default /, '')}: ${entry.detail}`).join('; ');
      if (accounts.length === 0 || accounts.some((entry) => entry.state === 'failing')) return { channel, status: 'fail', detail: `${done}; ${said}` };
      return { channel, status: 'ok', detail: `${done}; ${said}` };
    }),
  );
}

