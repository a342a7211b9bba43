export { checkTelegramToken, createTelegramAdapter, telegramTextLimit, toChannelError, type TelegramAdapterOptions } from './telegram-adapter.js';
