import type { ChannelLogger as Logger } from '@roster/contracts';
import type { ChannelTarget, SentMessage } from '@roster/channels';
import { MessageFlags, type ButtonInteraction, type ChatInputCommandInteraction } from 'discord.js';
import { safeError, toChannelError } from './discord-errors.js';

/** An interaction's token lasts 15 minutes; after that, answers go as plain messages (or not at all, for one person's eyes only). */
const interactionLifetimeMs = 15 * 60 * 1000;

/** A slash command or a button press being answered: the first answer replies to it (or fills the deferred reply), later ones follow up. */
export interface PendingInteraction {
  interaction: ChatInputCommandInteraction | ButtonInteraction;
  /** Shown to the person alone. */
  ephemeral: boolean;
  state: 'open' | 'deferring' | 'deferred' | 'answered';
  /** Calls on this interaction, one at a time. */
  queue: Promise<unknown>;
  deferTimer: NodeJS.Timeout;
  expiresAt: number;
  /** The ids of the messages sent through it (to edit them through the interaction's webhook). */
  messages: Set<string>;
}

/**
 * The slash commands and button presses being answered, each within
 * Discord's three seconds: deferred ("thinking…") when no answer came in
 * `deferAfterMs`, then filled in; later answers follow up while the
 * interaction's token lasts.
 */
export function createInteractions(log: Logger | undefined, deferAfterMs: number) {
  const pending = new Map<string, PendingInteraction>();

  async function call<T>(what: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw toChannelError(what, error);
    }
  }

  /** Keep an interaction to answer, and defer it when no answer came in time. */
  function track(interaction: ChatInputCommandInteraction | ButtonInteraction, ephemeral: boolean): PendingInteraction {
    // Counted from its creation by Discord's clock, or from its arrival by ours when this machine's clock runs behind.
    const since = Math.min(interaction.createdTimestamp, Date.now());
    const entry: PendingInteraction = {
      interaction,
      ephemeral,
      state: 'open',
      queue: Promise.resolve(),
      expiresAt: since + interactionLifetimeMs,
      messages: new Set(),
      deferTimer: setTimeout(
        () => {
          entry.queue = entry.queue.then(async () => {
            if (entry.state !== 'open') return;
            entry.state = 'deferring';
            try {
              await interaction.deferReply(ephemeral ? { flags: MessageFlags.Ephemeral } : {});
              entry.state = 'deferred';
            } catch (error) {
              entry.state = 'open';
              log?.warn({ err: safeError(error) }, 'a Discord interaction could not be deferred');
            }
          });
        },
        Math.max(0, deferAfterMs - (Date.now() - since)),
      ),
    };
    entry.deferTimer.unref();
    pending.set(interaction.id, entry);
    setTimeout(() => pending.delete(interaction.id), interactionLifetimeMs).unref();
    return entry;
  }

  /** One answer through an interaction: the reply, the deferred reply filled in, or a follow-up. */
  function answerInteraction(entry: PendingInteraction, text: string): Promise<SentMessage> {
    const next = entry.queue.then(async (): Promise<SentMessage> => {
      const flags = entry.ephemeral ? MessageFlags.Ephemeral : undefined;
      const allowedMentions = { parse: [] };
      let id: string;
      if (entry.state === 'open') {
        clearTimeout(entry.deferTimer);
        const response = await call('answering a command', () => entry.interaction.reply({ content: text, allowedMentions, ...(flags === undefined ? {} : { flags }), withResponse: true }));
        id = response.resource?.message?.id ?? `interaction:${entry.interaction.id}`;
      } else if (entry.state === 'deferred') {
        id = (await call('answering a command', () => entry.interaction.editReply({ content: text, allowedMentions }))).id;
      } else {
        id = (await call('following up a command', () => entry.interaction.followUp({ content: text, allowedMentions, ...(flags === undefined ? {} : { flags }) }))).id;
      }
      entry.state = 'answered';
      entry.messages.add(id);
      return { id };
    });
    entry.queue = next.catch(() => undefined);
    return next;
  }

  /** The interaction a target answers, while its token lasts. */
  function interactionOf(target: ChannelTarget): PendingInteraction | null {
    const id = target.replyTo?.startsWith('interaction:') === true ? target.replyTo.slice('interaction:'.length) : null;
    const entry = id === null ? undefined : pending.get(id);
    return entry !== undefined && Date.now() < entry.expiresAt ? entry : null;
  }

  return {
    track,
    answer: answerInteraction,
    of: interactionOf,
    /** Forget every interaction (the adapter stops). */
    clear(): void {
      for (const entry of pending.values()) clearTimeout(entry.deferTimer);
      pending.clear();
    },
  };
}
