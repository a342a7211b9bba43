/** What `roster doctor` and `roster channel` ask of the channels: each one checked, and the host a plugin is given. */
import type { InstallationKey, Logger } from '@roster/config';
import type { ChannelHost } from '@roster/contracts';
import type { Database } from '@roster/db';
import { createLeaseStore } from './lease.js';
import { channelStates, defaultAccount, type ChannelConfig, type StoredSettings } from './settings.js';

/** A channel as `roster doctor` reports it. */
export interface ChannelCheck {
  channel: string;
  status: 'ok' | 'fail' | 'off';
  detail: string;
}

/** What a plugin is given: the logger, secrets derived from the installation key, and the services of this process. */
export function channelHost(options: { logger: Logger; key?: InstallationKey; database?: Database; services?: Readonly<Record<string, unknown>> }): ChannelHost {
  const { key } = options;
  return {
    logger: options.logger,
    derive: (purpose) => {
      if (key === undefined) throw new Error('The installation key could not be loaded: roster doctor says why.');
      return key.derive(purpose);
    },
    services: { ...(options.database === undefined ? {} : { database: options.database }), ...(key === undefined ? {} : { key }), ...options.services },
  };
}

/**
 * Each registered channel checked against its platform (its plugin's
 * `check`: a token tried, a link read), called ok only when the platform
 * takes it; one that is not configured is `off`, one half configured `fail`.
 */
export async function checkChannels(
  config: ChannelConfig,
  options: { stored?: StoredSettings; timeoutMs?: number; database?: Database; key?: InstallationKey; logger: Logger },
): Promise<ChannelCheck[]> {
  const host = channelHost({ logger: options.logger, ...(options.key === undefined ? {} : { key: options.key }), ...(options.database === undefined ? {} : { database: options.database }) });
  return Promise.all(
    channelStates(config, options.stored).map(async ({ channel, plugin, setup }): Promise<ChannelCheck> => {
      if (setup.state === 'off') return { channel, status: 'off', detail: setup.detail };
      if (setup.state === 'incomplete') return { channel, status: 'fail', detail: setup.detail };
      const check = await plugin.check(setup.settings, host, options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }).catch((error: unknown) => ({
        status: 'fail' as const,
        detail: (error as Error).message,
      }));
      if (check.status !== 'ok') return { channel, status: check.status, detail: check.detail };
      const served =
        options.database === undefined || setup.exclusive === false ? undefined : await createLeaseStore(options.database).holderOf(channel, defaultAccount).catch(() => undefined);
      const by = served === undefined ? '' : served === null ? '; no gateway serves it now' : `; served by ${served.holder}`;
      return { channel, status: check.status, detail: `${check.detail}${setup.mode === undefined ? '' : `; ${setup.mode}`}${by}` };
    }),
  );
}
