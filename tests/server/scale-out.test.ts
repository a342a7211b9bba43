import { describe, it } from 'vitest';
import { requireServerUrl, serverInstallation } from '../support/installation.js';
import { oneConversationOverTwoProcesses, oneUpdateToTwoServers } from '../support/scale-out.js';

/** tests/scale-out.test.ts on a server Postgres: a database of its own on TEST_DATABASE_URL, dropped afterwards. */
const adminUrl = requireServerUrl();

describe('two of each process on one server Postgres and one Redis', () => {
  it('keeps a conversation’s turns in order across both servers, relays and runs every job once, and registers each schedule once', () => oneConversationOverTwoProcesses(() => serverInstallation(adminUrl)));
});

describe('two servers behind one Telegram webhook, on one server Postgres', () => {
  it('answer an update that reaches both of them (a redelivery landing on the other server) once, and keep it once', () => oneUpdateToTwoServers(() => serverInstallation(adminUrl)));
});
