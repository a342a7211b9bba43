import { ApplicationCommandOptionType, ApplicationIntegrationType, InteractionContextType, type ApplicationCommandDataResolvable } from 'discord.js';

/**
 * Roster's commands as Discord slash commands, registered for the whole
 * application (servers and the bot's direct messages). Each option is a
 * string; the adapter joins them back into the core's form (`/agent Scout`).
 */
export const discordCommands: ApplicationCommandDataResolvable[] = [
  { name: 'agents', description: 'The agents you can talk to' },
  {
    name: 'agent',
    description: 'Talk to one agent from now on',
    options: [
      { type: ApplicationCommandOptionType.String, name: 'name', description: 'The agent’s name', required: true, max_length: 100 },
      { type: ApplicationCommandOptionType.String, name: 'message', description: 'Something to say to it at once', required: false, max_length: 4000 },
    ],
  },
  { name: 'team', description: 'Talk to every agent at once' },
  { name: 'memory', description: 'What this agent knows about you' },
  {
    name: 'forget',
    description: 'Make this agent forget what matches your words',
    options: [{ type: ApplicationCommandOptionType.String, name: 'words', description: 'What to forget', required: true, max_length: 1000 }],
  },
  {
    name: 'link',
    description: 'Tie this Discord account to you, with a code from the owner',
    options: [{ type: ApplicationCommandOptionType.String, name: 'code', description: 'The link code', required: true, max_length: 64 }],
  },
  { name: 'help', description: 'What Roster understands here' },
].map((command) => ({
  ...command,
  contexts: [InteractionContextType.Guild, InteractionContextType.BotDM],
  integrationTypes: [ApplicationIntegrationType.GuildInstall],
})) as ApplicationCommandDataResolvable[];

export const commandNames = new Set(['agents', 'agent', 'team', 'memory', 'forget', 'link', 'help']);

