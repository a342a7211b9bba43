export {
  checkDiscordToken,
  createDiscordAdapter,
  discordApiUrl,
  discordCommands,
  discordGatewayShards,
  discordIntents,
  discordTextLimit,
  toChannelError,
  type DiscordAdapter,
  type DiscordAdapterOptions,
} from './discord-adapter.js';
export { channelPlugin, discordChannelIdPattern, maxDiscordBoundChannels } from './plugin.js';
