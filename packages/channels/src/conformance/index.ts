export { describeChannelConformance, until } from './suite.js';
export type { ChannelHarness, Delivered, FakePlatform, PlatformMessage, PlatformUser, SendAttempt, SentRecord } from './harness.js';
