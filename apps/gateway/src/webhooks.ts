import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerWebhook } from '@roster/channels';
import type { ChannelConfig } from './settings.js';
import type { ChannelWebhooks } from './index.js';

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
