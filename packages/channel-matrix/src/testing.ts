/** The fake Matrix homeserver, for tests: this package's own, the gateway's end to end, and any that serve Matrix. */
export { startFakeMatrix, type FakeMatrix } from './fake-matrix.js';
export type { FakeEvent } from './fake-homeserver.js';
