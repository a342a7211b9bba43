export { until } from './until.js';
export { fakePicture } from './harness.js';
export type { ChannelHarness, Delivered, FakePlatform, PlatformAttachment, PlatformMessage, PlatformUser, SendAttempt, SentRecord } from './harness.js';
export { describeLinkedDeviceStoreConformance } from './linked-device-store.js';
