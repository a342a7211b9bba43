import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@roster/config';
import { testInstallationKey } from '@roster/config/testing';
import type { ChannelHost, ChannelSetup } from '@roster/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeMatrix, type FakeMatrix } from './fake-matrix.js';
import { channelPlugin, type MatrixSettings } from './plugin.js';

const host: ChannelHost = {
  logger: createLogger({ LOG_LEVEL: 'silent' }),
  derive: (purpose) => testInstallationKey.derive(purpose),
  services: {},
};
const sources = (environment: Record<string, string | undefined>, stored: Record<string, string> = {}) => ({
  environment: Object.fromEntries(Object.entries(channelPlugin.environment).map(([name, spec]) => [name, spec.schema.parse(environment[name])])),
  stored,
  boundRooms: [],
  serverAddress: 'http://127.0.0.1:8420',
});

describe('the Matrix plugin', () => {
  it('says whether Matrix is served, from the environment or what is stored, the environment first', () => {
    expect(channelPlugin.setup(sources({}))).toMatchObject({ state: 'off' });
    expect(channelPlugin.setup(sources({ MATRIX_ACCESS_TOKEN: 'syt_abc' }))).toMatchObject({ state: 'incomplete', detail: expect.stringContaining('MATRIX_HOMESERVER_URL') });
    expect(channelPlugin.setup(sources({ MATRIX_HOMESERVER_URL: 'https://matrix.example.org' }))).toMatchObject({ state: 'incomplete', detail: expect.stringContaining('MATRIX_ACCESS_TOKEN') });
    expect(channelPlugin.setup(sources({}, { access_token: 'syt_abc', homeserver: 'matrix.example.org' }))).toMatchObject({ state: 'incomplete', detail: expect.stringContaining('--homeserver') });
    expect(channelPlugin.setup(sources({ MATRIX_HOMESERVER_URL: 'https://matrix.example.org/', MATRIX_ACCESS_TOKEN: ' syt_abc ', MATRIX_ROOM_INVITERS: '@ada:example.org, *:example.org' }))).toEqual({
      state: 'configured',
      settings: { homeserverUrl: 'https://matrix.example.org/', accessToken: 'syt_abc', roomInviters: ['@ada:example.org', '*:example.org'] },
      mode: '/sync long polling at https://matrix.example.org/',
    });
    const stored = channelPlugin.setup(sources({ MATRIX_ACCESS_TOKEN: 'syt_from_env' }, { access_token: 'syt_stored', homeserver: 'https://stored.example.org' })) as ChannelSetup<MatrixSettings>;
    expect(stored).toMatchObject({ state: 'configured', settings: { homeserverUrl: 'https://stored.example.org', accessToken: 'syt_from_env', roomInviters: [] } });
  });

  it('refuses a homeserver address under /_matrix, a non-http one, and an inviter that is no Matrix id', () => {
    const { MATRIX_HOMESERVER_URL: homeserver, MATRIX_ROOM_INVITERS: inviters } = channelPlugin.environment;
    expect(homeserver!.schema.safeParse('https://matrix.example.org/_matrix/client/v3').success).toBe(false);
    expect(homeserver!.schema.safeParse('ftp://matrix.example.org').success).toBe(false);
    expect(homeserver!.schema.parse('')).toBeUndefined();
    expect(inviters!.schema.safeParse('ada').success).toBe(false);
    expect(inviters!.schema.parse('')).toEqual([]);
    expect(channelPlugin.environment.MATRIX_ACCESS_TOKEN!.secret).toBe(true);
  });

  describe('against a homeserver', () => {
    let fake: FakeMatrix;
    let notMatrix: http.Server;
    let notMatrixUrl: string;
    beforeAll(async () => {
      fake = await startFakeMatrix();
      notMatrix = http.createServer((_request, response) => response.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not Found</h1>'));
      await new Promise<void>((resolve) => notMatrix.listen(0, '127.0.0.1', resolve));
      notMatrixUrl = `http://127.0.0.1:${(notMatrix.address() as AddressInfo).port}`;
    });
    afterAll(async () => {
      await fake?.close();
      await new Promise<void>((resolve) => notMatrix.close(() => resolve()));
    });
    const settings = (homeserverUrl: string, accessToken: string): MatrixSettings => ({ homeserverUrl, accessToken, roomInviters: [] });

    it('says who the token is, or what is wrong, as roster doctor shows it', async () => {
      expect(await channelPlugin.check(settings(fake.homeserverUrl, fake.accessToken), host, { timeoutMs: 5000 })).toEqual({
        status: 'ok',
        detail: `signed in as ${fake.botUserId} (device ROSTERFAKE) at ${fake.homeserverUrl}`,
      });
      const refused = await channelPlugin.check(settings(fake.homeserverUrl, 'syt_wrong'), host, {});
      expect(refused).toEqual({ status: 'fail', detail: expect.stringContaining('refused the access token') });
      expect(refused.detail).not.toContain('syt_wrong');
      expect(await channelPlugin.check(settings(notMatrixUrl, fake.accessToken), host, {})).toEqual({
        status: 'fail',
        detail: expect.stringContaining(`${notMatrixUrl} does not answer like a Matrix homeserver`),
      });
      // A port nothing listens on: the address is what to check.
      const closed = http.createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const gone = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      expect(await channelPlugin.check(settings(gone, fake.accessToken), host, { timeoutMs: 2000 })).toEqual({
        status: 'fail',
        detail: expect.stringMatching(/could not be reached.*MATRIX_HOMESERVER_URL/),
      });
    });

    it('makes an adapter that refuses to start with a token the homeserver refuses', async () => {
      const adapter = await channelPlugin.create(settings(fake.homeserverUrl, 'syt_wrong'), host);
      expect(adapter).toMatchObject({ channel: 'matrix', account: 'default', capabilities: { buttons: false, typing: true, commandPrefix: '!' } });
      const controller = new AbortController();
      await expect(adapter.start({ signal: controller.signal, onMessage: () => undefined, onApprovalPress: async () => ({ text: '', decided: false }) })).rejects.toThrow(/MATRIX_ACCESS_TOKEN/);
      await adapter.stop();
    });
  });
});
