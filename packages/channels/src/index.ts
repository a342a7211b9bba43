export type { ApprovalPress, ApprovalRequest, ChannelAdapter, ChannelCapabilities, ChannelEvent, ChannelStartOptions, ChannelTarget, SentMessage } from './adapter.js';
export { rosterCommand, telegramCommand } from './commands.js';
export { RecentDeliveries } from './dedupe.js';
export { downloadFile, tooLargeText, type DownloadOptions } from './download.js';
export { ChannelError, type ChannelFailure } from './errors.js';
export { SenderRateLimit } from './rate-limit.js';
export { retryRateLimited, type RetryOptions } from './retry.js';
export { serveChannel, type ApprovalDesk, type ServeChannelOptions, type ServedChannel } from './serve.js';
export { splitText } from './split.js';
export {
  checkCredentialChannel,
  createChannelCredentialStore,
  credentialChannels,
  credentialSpecs,
  type ChannelCredentialStore,
  type CredentialChannel,
  type StoredCredentials,
} from './credentials.js';
