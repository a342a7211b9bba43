import fs from 'node:fs';
import { channelNamePattern, localDoors, type AnyChannelPlugin, type VariableSpec } from '@roster/contracts';

/**
 * The registry of channels. A channel is a package named `@roster/channel-*`
 * among this package's dependencies, whose `./plugin` entry exports
 * `channelPlugin`; adding one to `package.json` is all it takes. Each
 * plugin's entry is light (its platform library is loaded when an adapter is
 * made), so every command may load the registry.
 */
const manifest = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { dependencies?: Record<string, string> };
const packages = Object.keys(manifest.dependencies ?? {})
  .filter((name) => name.startsWith('@roster/channel-') && name !== '@roster/channel-registry')
  .sort();

async function load(packageName: string): Promise<AnyChannelPlugin> {
  const entry = `${packageName}/plugin`;
  const loaded = (await import(entry)) as { channelPlugin?: AnyChannelPlugin };
  const plugin = loaded.channelPlugin;
  if (plugin === undefined || typeof plugin.setup !== 'function' || typeof plugin.create !== 'function' || typeof plugin.check !== 'function') {
    throw new Error(`${entry} does not export a channelPlugin (name, environment, credentials, setup, create, check).`);
  }
  if (!channelNamePattern.test(plugin.name) || localDoors.includes(plugin.name)) {
    throw new Error(`${entry} names its channel ${JSON.stringify(plugin.name)}: a lower-case letter, then letters, digits or -, and not ${localDoors.join(' or ')}.`);
  }
  return plugin;
}

/** Every registered channel, by name. */
export const channelPlugins: readonly AnyChannelPlugin[] = await Promise.all(packages.map(load));

{
  const names = channelPlugins.map((plugin) => plugin.name);
  const twice = names.find((name, index) => names.indexOf(name) !== index);
  if (twice !== undefined) throw new Error(`Two channel packages call themselves ${JSON.stringify(twice)}.`);
  const variables = channelPlugins.flatMap((plugin) => Object.keys(plugin.environment));
  const shared = variables.find((name, index) => variables.indexOf(name) !== index);
  if (shared !== undefined) throw new Error(`Two channel packages read ${shared}.`);
}

/** The names of the registered channels, in order. */
export const channelNames: readonly string[] = channelPlugins.map((plugin) => plugin.name);

/** The registered channel called `name`, or undefined. */
export function findChannelPlugin(name: string): AnyChannelPlugin | undefined {
  return channelPlugins.find((plugin) => plugin.name === name);
}

/** Every registered channel's environment variables, for the configuration to parse with Roster's own. */
export const channelVariables: Readonly<Record<string, VariableSpec>> = Object.assign({}, ...channelPlugins.map((plugin) => plugin.environment));
