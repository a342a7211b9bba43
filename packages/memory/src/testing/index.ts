/** Test helpers of @roster/memory: a fixed installation key and a seeded memory over a test database. */
export { testInstallationKey, testSecretKey } from '@roster/config/testing';
export { memoryFixture, saidBy, type MemoryFixture } from './fixture.js';
