import { InstallationKey } from './installation-key.js';

/**
 * A fixed installation key for tests, as ROSTER_SECRET_KEY would hold it, so
 * a test can hand the same key to a `roster` process it starts.
 */
export const testSecretKey = '7465737420696e7374616c6c6174696f6e206b657920666f7220726f73746572';

/** The installation key of `testSecretKey`: tests build memory with it. */
export const testInstallationKey = new InstallationKey(Buffer.from(testSecretKey, 'hex'), 'test');
