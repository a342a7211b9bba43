export {
  checkDiscordToken,
  createDiscordAdapter,
  discordApiUrl,
  discordCommands,
  discordIntents,
  discordTextLimit,
  toChannelError,
  type DiscordAdapter,
  type DiscordAdapterOptions,
} from './discord-adapter.js';
export { channelPlugin, discordChannelIdPattern, maxDiscordBoundChannels } from './plugin.js';
