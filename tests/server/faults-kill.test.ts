import { describe, it } from 'vitest';
import { killDuringBurst } from '../support/faults-kill.js';
import { requireServerUrl, serverInstallation } from '../support/installation.js';

/** tests/faults-kill.test.ts on a server Postgres: a database of its own on TEST_DATABASE_URL, dropped afterwards. */
const adminUrl = requireServerUrl();

describe('roster start killed (kill -9) during a burst of turns, on a server Postgres', () => {
  it('opens cleanly again with every acknowledged turn there, its reply and its memory, no turn half-stored, and the audit chain intact', () => killDuringBurst(() => serverInstallation(adminUrl)));
});
