export {
  checkTelegramToken,
  createTelegramAdapter,
  telegramSecretHeader,
  telegramTextLimit,
  telegramWebhookPath,
  toChannelError,
  type TelegramAdapter,
  type TelegramAdapterOptions,
  type TelegramWebhookRequest,
} from './telegram-adapter.js';
export { channelPlugin } from './plugin.js';
