export type { ApprovalPress, ApprovalRequest, ChannelAdapter, ChannelCapabilities, ChannelEvent, ChannelStartOptions, ChannelTarget, SentMessage } from '@roster/contracts';
export { rosterCommand, telegramCommand } from './commands.js';
export { RecentDeliveries } from './dedupe.js';
export { downloadFile, tooLargeText, type DownloadOptions } from './download.js';
export { ChannelError, type ChannelFailure } from './errors.js';
export { SenderRateLimit } from './rate-limit.js';
export { retryRateLimited, type RetryOptions } from './retry.js';
export { splitText } from './split.js';
export { answerWebhook, readJsonBody, webhookBodyLimit } from './webhook.js';
