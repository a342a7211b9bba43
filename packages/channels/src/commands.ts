/**
 * Platform forms of Roster's commands, rewritten into the core's (`/agents`,
 * `/agent NAME`, `/team`, `/memory`, `/forget …`, `/link CODE`, `/help`),
 * which the core answers for every door after its access policy.
 */

/**
 * Telegram's forms: `/agents@RosterBot` names the bot (in groups), `/start`
 * is what a person's first tap sends, and `/start CODE` is a deep link
 * (t.me/RosterBot?start=CODE) carrying a link code. Returns the core's form
 * and whether the command names another bot (then it is not for us).
 */
export function telegramCommand(text: string, botUsername: string): { text: string; namesBot: boolean; forAnotherBot: boolean } {
  const match = /^\/([A-Za-z0-9_]+)(?:@([A-Za-z0-9_]+))?(?=\s|$)([\s\S]*)$/u.exec(text);
  if (match === null) return { text, namesBot: false, forAnotherBot: false };
  const [, command, bot, rest = ''] = match;
  const namesBot = bot !== undefined && bot.toLowerCase() === botUsername.toLowerCase();
  const forAnotherBot = bot !== undefined && !namesBot;
  const words = rest.trim();
  if (command!.toLowerCase() === 'start') return { text: words === '' ? '/help' : `/link ${words}`, namesBot, forAnotherBot };
  return { text: words === '' ? `/${command!.toLowerCase()}` : `/${command!.toLowerCase()} ${words}`, namesBot, forAnotherBot };
}

/**
 * Slack's form: one slash command, `/roster <command> [words]` (Slack keeps
 * messages that start with `/` for slash commands). `words` is what Slack
 * sends as the command's text: `agents`, `link ABCD2345`, `agent Scout`.
 * An empty one asks for help.
 */
export function rosterCommand(words: string): string {
  const text = words.trim().replace(/^\//, '');
  return text === '' ? '/help' : `/${text}`;
}
