import type { Logger } from '@roster/config';
import type { ChannelAdapter, ChannelTarget } from '@roster/contracts';
import { splitText } from '@roster/channels';

/** What a reply stream needs of the channel it is served on. */
interface StreamDeps {
  adapter: ChannelAdapter;
  streaming: { afterMs?: number; everyMs?: number } | false | undefined;
  /** Send a whole text, split at the platform's limit; resolves to whether it was delivered. */
  send(target: ChannelTarget, text: string): Promise<boolean>;
  /** One platform call, 429s waited out; resolves to whether it went through. */
  deliver(target: ChannelTarget, call: () => Promise<unknown>): Promise<boolean>;
  log?: Logger;
}

/** The replies of one turn as they stream in. */
export interface ReplyStream {
  /** A part of an agent's reply as the engine writes it. */
  onPart(agent: string, part: { type: string; text?: string }): void;
  /** The final text of an agent's reply: into the message already sent, if any, and the rest after it. Resolves to whether it was delivered. */
  finish(agent: string, text: string, team: boolean): Promise<boolean>;
  /** Wait for edits under way (the turn failed or was cut short). */
  drain(): Promise<void>;
}

/**
 * The replies of one turn as they are written: a reply still growing after
 * a while is sent as it stands, then edited at a bounded rate; the final
 * text replaces it (and what does not fit goes in further messages).
 */
export function streamer(target: ChannelTarget, { adapter, streaming, send, deliver, log }: StreamDeps): ReplyStream {
  const settings = streaming === false ? null : { afterMs: streaming?.afterMs ?? 1500, everyMs: streaming?.everyMs ?? 1500 };
  const limit = adapter.capabilities.textLimit;
  const replies = new Map<string, { text: string; began: number; messageId: string | null; shown: string; lastEdit: number; busy: Promise<void> }>();
  let failed = false;
  /** In a team turn, each reply is headed by its agent's name (known once a second agent writes). */
  const label = (agent: string, text: string, team = replies.size > 1) => (team ? `${agent}: ${text}` : text);
  /** What can be shown of a growing text in one message: its beginning, marked as unfinished. */
  const partial = (text: string) => (text.length + 2 > limit ? `${text.slice(0, limit - 2)} …` : `${text} …`);

  function update(agent: string): void {
    const reply = replies.get(agent)!;
    if (settings === null || failed) return;
    const now = Date.now();
    if (reply.messageId === null ? now - reply.began < settings.afterMs : now - reply.lastEdit < settings.everyMs) return;
    const shown = partial(label(agent, reply.text));
    if (shown === reply.shown) return;
    reply.lastEdit = now;
    reply.shown = shown;
    reply.busy = reply.busy.then(async () => {
      try {
        if (reply.messageId === null) reply.messageId = (await adapter.sendText(target, shown)).id;
        else await adapter.editText(target, reply.messageId, shown);
      } catch (error) {
        // A stream that cannot go on falls back to one message with the whole reply at the end.
        log?.debug({ err: error }, 'a streamed reply could not be updated');
        if (reply.messageId === null) failed = true;
      }
    });
  }

  return {
    onPart(agent: string, part: { type: string; text?: string }) {
      if (part.type !== 'text-delta' || typeof part.text !== 'string') return;
      let reply = replies.get(agent);
      if (reply === undefined) {
        reply = { text: '', began: Date.now(), messageId: null, shown: '', lastEdit: 0, busy: Promise.resolve() };
        replies.set(agent, reply);
      }
      reply.text += part.text;
      update(agent);
    },
    /** The final text of an agent's reply: into the message already sent, if any, and the rest after it. Resolves to whether it was delivered. */
    async finish(agent: string, text: string, team: boolean): Promise<boolean> {
      const reply = replies.get(agent);
      const whole = label(agent, text, team);
      if (reply === undefined || reply.messageId === null) return send(target, whole);
      await reply.busy;
      const [first = '', ...rest] = splitText(whole, limit);
      const messageId = reply.messageId;
      if (!(await deliver(target, () => adapter.editText(target, messageId, first)))) return false;
      for (const part of rest) if (!(await deliver(target, () => adapter.sendText(target, part)))) return false;
      return true;
    },
    /** Wait for edits under way (the turn failed or was cut short). */
    async drain(): Promise<void> {
      await Promise.allSettled([...replies.values()].map((reply) => reply.busy));
    },
  };
}
