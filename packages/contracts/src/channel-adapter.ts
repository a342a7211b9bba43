import type { Channel, InboundFile, InboundMessage } from './inbound.js';

/**
 * What a platform can do, as flags: the shared code reads them instead of
 * asking which platform it is talking to.
 */
export interface ChannelCapabilities {
  /** Answers can go in a thread under the message (Slack). */
  threads: boolean;
  /** Messages can carry buttons (approvals are pressed, not typed). */
  buttons: boolean;
  /**
   * The adapter hands images, voice notes and files over (`ChannelEvent.fetchFiles`);
   * without it a person is told plainly that what they sent cannot be read here.
   */
  media: boolean;
  /** The platform shows that the bot is typing. */
  typing: boolean;
  /** The longest text one message may carry, in UTF-16 code units; longer replies are split. */
  textLimit: number;
  /**
   * How a person writes a command here: `/` (`/agents`), or `/roster ` where
   * the platform keeps `/` for its own slash commands (Slack).
   */
  commandPrefix: string;
}

/** Where an answer goes. */
export interface ChannelTarget {
  /** The platform's conversation: a chat, a channel, a direct-message channel. */
  chatId: string;
  /** The thread to answer in, where the platform has threads. */
  threadId?: string;
  /** The platform message being answered (quoted under the answer in a group). */
  replyTo?: string;
  /**
   * Show the answer to this handle alone, where the platform can (Slack's
   * ephemeral messages: a command's answer in a channel).
   */
  visibleTo?: string;
  /**
   * The handle of the person the answer is for. When the platform refuses to
   * deliver to them (blocked, gone), this handle is marked unreachable.
   */
  recipient?: string;
}

/** A platform message, turned into what the core takes plus what the gateway needs to answer it. */
export interface ChannelEvent {
  /** What `core.handle` receives. */
  inbound: InboundMessage;
  /**
   * The bot was @mentioned (or named by its command suffix, `/agents@bot`), or
   * the message was said where every message is for it (a Discord bound channel).
   */
  mentionsBot: boolean;
  /** The platform id of the message this one replies to, or null. */
  replyTo: string | null;
  /** That replied-to message is the bot's own. */
  replyToBot: boolean;
  /** Images, voice notes or files the message carried (kinds only). */
  media: Array<'image' | 'voice' | 'audio' | 'video' | 'file'>;
  /**
   * Fetch the files of `media` from the platform, each at most `maxFileBytes`
   * (a larger one is refused before or while it downloads, with a
   * `ChannelError` a person can read). Called only for a message that is
   * handled (past the group filter and the rate limit). `skipped` lists the
   * media kinds not handed over (a video): the person is told those cannot be
   * read. Absent: nothing is handed over.
   */
  fetchFiles?: (signal: AbortSignal) => Promise<{ files: InboundFile[]; skipped: ChannelEvent['media'] }>;
  /** Where the answer goes. */
  target: ChannelTarget;
  /**
   * The platform's id of this delivery (Telegram's update id, Slack's event
   * id): a redelivery carries the same one and is handled once.
   */
  deliveryId: string;
}

/** A lesson (or another decision) waiting for the owner, with its full text. */
export interface ApprovalRequest {
  id: string;
  /** The agent whose prompts the lesson would ride in. */
  agent: string;
  /** The whole text the owner approves: never shortened. */
  text: string;
  /** The handles on the asking channel it was pushed to already (by this gateway or another, before a restart). */
  pushedTo?: string[];
}

/** Someone pressed an approval's button. */
export interface ApprovalPress {
  approvalId: string;
  decision: 'approve' | 'reject';
  /** The handle of whoever pressed it; only an owner's is obeyed. */
  sender: { externalId: string; displayName?: string };
  /** The message that carries the buttons. */
  target: ChannelTarget;
}

/** A message the platform accepted. */
export interface SentMessage {
  /** The platform's id of it (to edit or thread under it). */
  id: string;
}

export interface ChannelStartOptions {
  /**
   * A platform message for Roster. Resolves once Roster has kept it (in the
   * database, under the bot account's lease), never after the answer: one
   * slow answer never holds the others up. An adapter whose platform counts
   * a message delivered only when it asks for more (Telegram's next long
   * poll) waits for it before asking, so that a gateway stopped or killed in
   * between loses nothing: the next holder of the account answers it.
   */
  onMessage(event: ChannelEvent): void | Promise<void>;
  /**
   * An approval button was pressed. Resolves to what the presser is told and
   * whether the approval was decided (then its buttons can go).
   */
  onApprovalPress(press: ApprovalPress): Promise<{ text: string; decided: boolean }>;
  /** Aborted when the gateway stops. */
  signal: AbortSignal;
  /**
   * The adapter stopped receiving on its own: the platform ended its session
   * (another process polls the same bot, the token was revoked). The host
   * stops it, lets go of the account and tries again later, instead of
   * serving a bot that hears nothing.
   */
  onStopped?(reason: string): void;
}

/**
 * A channel adapter: the thin part that knows one platform's library. It
 * turns platform events into `ChannelEvent`s and sends what it is given; the
 * shared gateway code (`serveChannel`) does everything else the same way on
 * every platform (policy through the core, commands, splitting, retries,
 * rate limits, unreachable people). Errors it throws for a send are
 * `ChannelError`s that say whether, and when, to try again.
 */
export interface ChannelAdapter {
  /** The channel in the core (`telegram`, `slack`). */
  readonly channel: Channel;
  /** The bot account: its binding in the core decides the agent and the access policy. */
  readonly account: string;
  readonly capabilities: ChannelCapabilities;
  /** Connect, learn the bot's own identity, and start receiving; resolves once receiving. */
  start(options: ChannelStartOptions): Promise<void>;
  /** Stop receiving and let go of every connection. */
  stop(): Promise<void>;
  /** Send one message of at most `capabilities.textLimit` characters, as plain text. */
  sendText(target: ChannelTarget, text: string): Promise<SentMessage>;
  /** Replace the text of a message the bot sent (a streamed answer, a decided approval). */
  editText(target: ChannelTarget, messageId: string, text: string): Promise<void>;
  /**
   * Send the message that carries an approval's approve/reject buttons. `text`
   * fits the platform's limit: the shared code sends any earlier part of a
   * long approval first, so the owner always sees its whole text.
   */
  sendApproval(target: ChannelTarget, approval: { id: string; text: string }): Promise<SentMessage>;
  /** Show that an answer is being written; nothing where `capabilities.typing` is false. */
  sendTyping(target: ChannelTarget): Promise<void>;
}
