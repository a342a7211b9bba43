/**
 * The channel conformance suite: what every channel adapter must do, run
 * against the real core (a PGlite database, the offline engine) and a fake
 * of the platform's far side that the adapter's own test supplies. Test-only:
 * it imports vitest.
 */
import { describe } from 'vitest';
import { conformanceContext } from './context.js';
import type { ChannelHarness } from '@roster/channels/testing';
import { messageCases } from './message-cases.js';
import { policyCases } from './policy-cases.js';

export function describeChannelConformance(name: string, harness: ChannelHarness): void {
  describe(`channel conformance: ${name}`, () => {
    const context = conformanceContext(harness);
    messageCases(context);
    policyCases(context);
  });
}
