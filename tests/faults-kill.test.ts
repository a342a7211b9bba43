import { describe, it } from 'vitest';
import { killDuringBurst } from './support/faults-kill.js';
import { embeddedInstallation } from './support/installation.js';

describe('roster start killed (kill -9) during a burst of turns, on the embedded database', () => {
  it('opens cleanly again with every acknowledged turn there, its reply and its memory, no turn half-stored, and the audit chain intact', () => killDuringBurst(embeddedInstallation));
});
