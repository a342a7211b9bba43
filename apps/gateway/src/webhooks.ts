import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerWebhook } from '@roster/channels';
import type { ChannelConfig } from './settings.js';

/** The platforms' webhooks (Slack's events, Telegram's updates) a gateway answers, for the server that receives them. */
export interface ChannelWebhooks {
  /** The paths a platform posts to. */
  readonly paths: readonly string[];
  /**
   * Answer one request to one of `paths`: the channel's own checks decide
   * (Slack's signature, Telegram's secret header); 404 when that channel is
   * not served in webhook mode by this gateway.
   */
  handle(request: IncomingMessage, response: ServerResponse): void;
}

/** A gateway running alone listens for the platforms' webhooks itself, on GATEWAY_PORT: the server and where it answers. */
export async function listenForWebhooks(webhooks: ChannelWebhooks, config: ChannelConfig): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer((request, response) => {
    if (request.method !== 'POST') return answerWebhook(response, 405);
    webhooks.handle(request, response);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.GATEWAY_PORT, config.HOST, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return { server, url: `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}` };
}
