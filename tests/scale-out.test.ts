import { describe, it } from 'vitest';
import { embeddedInstallation } from './support/installation.js';
import { oneConversationOverTwoProcesses, oneUpdateToTwoServers } from './support/scale-out.js';

describe('two of each process on one embedded database and one Redis', () => {
  it('keeps a conversation’s turns in order across both servers, relays and runs every job once, and registers each schedule once', () => oneConversationOverTwoProcesses(embeddedInstallation));
});

describe('two servers behind one Telegram webhook, on one embedded database', () => {
  it('answer an update that reaches both of them (a redelivery landing on the other server) once, and keep it once', () => oneUpdateToTwoServers(embeddedInstallation));
});
