import type { ChannelAdapter } from '@roster/contracts';

/** A person on the platform. */
export interface PlatformUser {
  id: string;
  name: string;
}

/** A message as a person writes it; the harness turns it into the platform's own event. */
export interface PlatformMessage {
  chat: 'dm' | 'group';
  from: PlatformUser;
  /** The words, without any mention of the bot: the harness adds the platform's mention when `mentionBot`. */
  text: string;
  /** The bot is @mentioned (in a group). */
  mentionBot?: boolean;
  /** The message answers an earlier one: the bot's own (`fromBot`) or someone else's. */
  replyTo?: { id: string; fromBot: boolean };
  /** An image comes with it (`text` is then its caption, maybe empty): `attachment`'s bytes, or a small picture of the fake's own. */
  image?: boolean;
  /** A file comes with it, with these bytes, as the platform carries one of its kind (`text` is its caption). */
  attachment?: PlatformAttachment;
}

/** A file a person sends: a photo, a voice note, or a document. */
export interface PlatformAttachment {
  kind: 'image' | 'voice' | 'document';
  data: Uint8Array;
  mediaType: string;
  name?: string;
}

/** The bytes of the picture a fake sends for `image: true` without an attachment (a 1×1 PNG). */
export const fakePicture = new Uint8Array(Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64'));

/** What the platform gave a delivered message. */
export interface Delivered {
  chatId: string;
  messageId: string;
  deliveryId: string;
}

/** A message the bot sent, as the fake platform recorded it. */
export interface SentRecord {
  id: string;
  chatId: string;
  text: string;
  /** The thread it went to, where the platform has threads. */
  threadId?: string;
  /** Shown to this person only (an ephemeral answer). */
  visibleTo?: string;
  /** Approval buttons it carries: the approval id and the decision of each. */
  buttons: Array<{ approvalId: string; decision: 'approve' | 'reject' }>;
  /** When the platform accepted it (ms since the epoch). */
  at: number;
}

/** One call that tried to send (accepted or refused), with its time. */
export interface SendAttempt {
  chatId: string;
  at: number;
  outcome: 'sent' | 'rate-limited' | 'blocked';
}

/**
 * A fake of one platform's far side (a local HTTP server that answers like
 * its API), with the adapter made against it. What an adapter's test supplies
 * to the conformance suite; everything else is the suite's.
 */
export interface FakePlatform {
  adapter: ChannelAdapter;
  /** The n-th person of this platform: distinct ids for distinct n. */
  user(n: number): PlatformUser;
  /** The conversation id of a one-to-one chat with this person. */
  dmChatId(user: PlatformUser): string;
  /** The conversation id of the group chat the bot is in. */
  readonly groupChatId: string;
  /** Deliver a new message as the platform would; resolves once the adapter has taken it. */
  deliver(message: PlatformMessage): Promise<Delivered>;
  /** Send one of Roster's commands the platform's way (`/agents` on Telegram, `/roster agents` on Slack). */
  command(from: PlatformUser, chat: 'dm' | 'group', words: string): Promise<Delivered>;
  /** Deliver the same delivery again, as the platform does when it thinks it was lost. */
  redeliver(delivered: Delivered): Promise<void>;
  /** Press an approval button, as this person, on a message the bot sent. */
  press(from: PlatformUser, sent: SentRecord, decision: 'approve' | 'reject'): Promise<void>;
  /** What the presser was told, in order. */
  pressAnswers(): string[];
  /** Every message the bot sent, in order. */
  sent(): SentRecord[];
  /** Every call that tried to send one. */
  attempts(): SendAttempt[];
  /** The chats the bot showed a typing indicator in, in order. */
  typing(): string[];
  /** The next send is refused with a 429 that asks to wait this many seconds. */
  rateLimitNextSend(seconds: number): void;
  /** This person blocked the bot: sends to them fail as the platform fails them. */
  block(user: PlatformUser): void;
  unblock(user: PlatformUser): void;
  close(): Promise<void>;
}

export interface ChannelHarness {
  /** Start the fake platform and make an adapter against it (not started: the suite starts it). */
  start(): Promise<FakePlatform>;
}
