import type { ChannelCredentialStore } from '@roster/channel-host';
import type { ChannelWebhooks } from '@roster/gateway';
import type { Config, InstallationKey, Logger } from '@roster/config';
import type { Database } from '@roster/db';
import type { Runtime } from '@roster/runtime';
import type { ApiRoutes } from './api.js';

/** What every group of routes is built from. */
export interface RouteContext {
  config: Config;
  database: Database;
  runtime: Runtime;
  logger: Logger;
  routes: ApiRoutes;
  /** Opens what is stored sealed. */
  key: InstallationKey;
  /** Channel credentials and the gateway of this process, when there is one. */
  channels: ServerChannels | undefined;
  /** Takes an erased person's queued jobs out of Redis, when this process has the queues. */
  removePersonJobs: ((personId: string) => Promise<Record<string, number>>) | undefined;
}

/** What the server knows of the channels beyond the configuration. */
export interface ServerChannels {
  /** The stored, sealed channel credentials. */
  credentials: ChannelCredentialStore;
  /** The platforms' webhooks of the gateway in this process (Slack's events, Telegram's updates), mounted on the server's port. */
  webhooks?: ChannelWebhooks;
  /** Tell the gateway of this process that credentials changed. */
  changed?: () => Promise<void>;
  /** The lease-holder name of the gateway in this process: an account another process receives is its standby. */
  holder?: string;
}
