import type { Logger } from '@roster/config';
import type { Core, InboundFile, MessageFence, Person, TurnResult } from '@roster/core';
import { RosterError } from '@roster/errors';
import type { ApprovalPress, ApprovalRequest, ChannelAdapter, ChannelEvent, ChannelTarget } from '@roster/contracts';
import { ChannelError, RecentDeliveries, SenderRateLimit, retryRateLimited, splitText } from '@roster/channels';
import { forTheBot, restored, storable } from './kept-event.js';
import { streamer, type ReplyStream } from './stream.js';

/**
 * Where approvals come from and where decisions go: the gateway gives
 * `@roster/learning`'s approval desk here, so that this package depends on
 * the core alone.
 */
export interface ApprovalDesk {
  /** What waits for a decision now, with the handles of `channel` each was pushed to. */
  pending(channel: string): Promise<ApprovalRequest[]>;
  /** Remember that an approval reached this owner's handle, so that it is not pushed there again. */
  markPushed(approvalId: string, channel: string, handle: string): Promise<void>;
  /**
   * Decide as this person. Throws a RosterError when refused (not an owner,
   * decided already); resolves to what happened, in words.
   */
  decide(approvalId: string, decision: 'approve' | 'reject', person: Person): Promise<string>;
}

export interface ServeChannelOptions {
  adapter: ChannelAdapter;
  core: Core;
  logger?: Logger;
  /** Per sender: at most `messages` in any `windowMs` (default 20 a minute). */
  rateLimit?: { messages: number; windowMs: number };
  /** The owner's pending approvals, pushed to the owner's handles on this channel with buttons. */
  approvals?: ApprovalDesk;
  /** How often pending approvals are looked for (default a minute). */
  approvalPollMs?: number;
  /** Whether this channel pushes the pending approvals (default true); `false` for all but one part of an account received in parts (Discord's shards). */
  pushesApprovals?: boolean;
  /** Tries per message when the platform answers 429 (default 4), and the longest wait accepted (default 5 minutes). */
  retry?: { attempts?: number; maxWaitMs?: number };
  /**
   * A reply still growing `afterMs` (default 1.5 s) after its first words is sent as it
   * stands and then edited as it grows, at most once every `everyMs`
   * (default 1.5 s, within Telegram's and Slack's rate limits); `false`
   * sends each reply once, whole.
   */
  streaming?: { afterMs?: number; everyMs?: number } | false;
  /** The adapter stopped receiving on its own (`ChannelStartOptions.onStopped`). */
  onStopped?(reason: string): void;
  /** The bot account's lease this channel is served under: what its turns store is checked against it (`TurnOptions.fence`). */
  fence?: MessageFence;
}

/** A channel being served: its adapter receiving, every answer going back through the same road. */
export interface ServedChannel {
  readonly adapter: ChannelAdapter;
  /**
   * Send a text of any length: split at the platform's limit on paragraph,
   * line or sentence ends, each 429 waited out as asked, a person who cannot
   * be reached marked so. Resolves to whether all of it was delivered; never throws.
   */
  send(target: ChannelTarget, text: string): Promise<boolean>;
  /** Push the approvals not pushed yet to the owners' handles on this channel; resolves to how many messages went out. */
  pushApprovals(): Promise<number>;
  /** Resolves once every message taken so far has been handled and answered. */
  settled(): Promise<void>;
  /** Whether a message taken is still being handled or answered. */
  answering(): boolean;
  stop(): Promise<void>;
}

const typingEveryMs = 4000;
/**
 * How long a stopping channel gives the answers under way. The platform
 * considers a message it handed over delivered (Telegram confirms it with the
 * next poll's offset, Slack and Discord with the acknowledgement), so a turn
 * cut off at the stop is a message lost: each one taken is answered first.
 */
export const answersGraceMs = 15_000;
const slowDown = 'You are writing faster than I can answer: wait a minute, then go on.';
// Worded as the core words it for files an engine cannot read: one sentence, whichever side found it.
const cannotRead = (kinds: string): string => `I cannot read ${kinds} here, only text: say it in words, please.`;
const failedFetch = 'What you sent could not be fetched from the platform, and nothing was kept; send it again in a moment.';
const failedTurn = 'Something went wrong on Roster’s side and nothing was answered; try again in a moment.';

/**
 * Serve one channel through the core. Every platform message goes to
 * `core.handle` and nowhere else: the core applies the access policy
 * (a stranger gets at most the pairing hint), runs the commands and the
 * agents, and stores what is kept. Around it, the same for every platform:
 * a redelivery is handled once, a group message only when it is for the bot,
 * a per-sender rate limit, a typing indicator for people already let in,
 * replies split at the platform's limit, 429s retried after the time asked,
 * and a person who blocked the bot marked unreachable without failing the turn.
 */
export async function serveChannel(options: ServeChannelOptions): Promise<ServedChannel> {
  const { adapter, core } = options;
  const log = options.logger?.child({ component: `gateway/${adapter.channel}`, account: adapter.account });
  const deliveries = new RecentDeliveries();
  const limit = new SenderRateLimit(options.rateLimit?.messages ?? 20, options.rateLimit?.windowMs ?? 60_000);
  const warned = new SenderRateLimit(1, options.rateLimit?.windowMs ?? 60_000);
  /** Handles the core let in lately: they get a typing indicator and a word when they write too fast. */
  const known = new Set<string>();
  const inFlight = new Set<Promise<void>>();
  const pushed = new Set<string>();
  const stopping = new AbortController();

  async function send(target: ChannelTarget, text: string): Promise<boolean> {
    for (const part of splitText(text, adapter.capabilities.textLimit)) {
      if (!(await deliver(target, () => adapter.sendText(target, part)))) return false;
    }
    return true;
  }

  /** One platform call, 429s waited out; false when it did not go through. */
  async function deliver(target: ChannelTarget, call: () => Promise<unknown>): Promise<boolean> {
    try {
      await retryRateLimited(call, {
        ...options.retry,
        signal: stopping.signal,
        onWait: (waitMs, attempt) => log?.warn({ waitMs, attempt }, 'the platform asked to wait before sending again'),
      });
      return true;
    } catch (error) {
      if (ChannelError.isChannelError(error) && error.failure === 'unreachable') {
        if (target.recipient !== undefined) {
          const marked = await core.directory.markUnreachable(adapter.channel, target.recipient).catch((failure: unknown) => {
            log?.error({ err: failure }, 'could not mark a handle unreachable');
            return false;
          });
          known.delete(target.recipient);
          log?.info({ marked }, 'the person cannot be reached on this channel; marked unreachable');
        }
        return false;
      }
      log?.warn({ err: error }, 'a message could not be sent');
      return false;
    }
  }

  function typing(target: ChannelTarget): () => void {
    if (!adapter.capabilities.typing) return () => undefined;
    const show = () => void adapter.sendTyping(target).catch((error: unknown) => log?.debug({ err: error }, 'typing indicator failed'));
    show();
    const timer = setInterval(show, typingEveryMs);
    return () => clearInterval(timer);
  }

  async function answer(event: ChannelEvent, result: TurnResult, stream: ReplyStream): Promise<void> {
    if (result.notice !== null && result.notice.trim() !== '' && !(await send(event.target, result.notice))) return;
    for (const reply of result.replies) {
      if (reply.text.trim() === '') continue;
      if (!(await stream.finish(reply.agent, reply.text, result.replies.length > 1))) return;
    }
  }

  /**
   * Handle one message and answer it. Resolves to whether it is done with
   * (answered, or needing no answer); false when this gateway's stop cut its
   * turn short or another gateway holds the account now: then it stays in
   * the inbox, for the account's next holder.
   */
  async function handle(event: ChannelEvent): Promise<boolean> {
    const inbound = event.inbound;
    const sender = inbound.sender.externalId ?? '';
    if (!forTheBot(event)) return true;
    if (!limit.take(sender)) {
      if (known.has(sender) && warned.take(sender)) await send(event.target, slowDown);
      log?.debug('a message over the sender’s rate limit was dropped');
      return true;
    }
    // The files go to the core with the words; an agent whose engine cannot read them says so itself.
    let files: InboundFile[] = [];
    let unread = event.media;
    if (event.media.length > 0 && event.fetchFiles !== undefined) {
      try {
        ({ files, skipped: unread } = await event.fetchFiles(stopping.signal));
      } catch (error) {
        // Too large, or not fetched: nothing reaches the core, nothing is kept. A person Roster knows is told why.
        log?.warn({ err: ChannelError.isChannelError(error) ? { code: error.code, message: error.message } : { name: error instanceof Error ? error.name : 'Error' } }, 'the files of a message were not taken');
        const person = await core.directory.personByIdentity(adapter.channel, sender);
        if (person !== null) await send(event.target, ChannelError.isChannelError(error) ? error.message : failedFetch);
        return true;
      }
    }
    let words = inbound.text;
    if (inbound.text.trim() === '' && files.length === 0) {
      // Only media that was not handed over: the agents would have nothing to read. A person it knows is told so;
      // anyone else meets the binding's policy in the core (the pairing hint, or nothing), with the media named in words.
      if (unread.length === 0) return true;
      const person = await core.directory.personByIdentity(adapter.channel, sender);
      if (person !== null) {
        await send(event.target, cannotRead(describeMedia(unread)));
        return true;
      }
      words = `[${describeMedia(unread)}]`;
    }
    const stopTyping = known.has(sender) ? typing(event.target) : () => undefined;
    let result: TurnResult;
    // Replies stream only in a one-to-one chat: in a group, an answer under construction would interleave with others.
    const stream = streamer(event.target, { adapter, streaming: options.streaming, send, deliver, ...(log === undefined ? {} : { log }) });
    const streaming = inbound.conversation.kind === 'dm' && options.streaming !== false;
    try {
      result = await core.handle(files.length === 0 ? { ...inbound, text: words } : { ...inbound, files }, {
        commandPrefix: adapter.capabilities.commandPrefix,
        signal: stopping.signal,
        ...(options.fence === undefined ? {} : { fence: options.fence }),
        ...(streaming ? { onPart: (agent: string, part: { type: string; text?: string }) => stream.onPart(agent, part) } : {}),
      });
    } catch (error) {
      await stream.drain();
      stopTyping();
      if (RosterError.isInstance(error) && error.code === 'lease_lost') {
        // Another gateway holds the account now: it answers; this one neither stores nor says anything more.
        log?.warn('a turn was refused: this gateway no longer holds the bot account');
        return false;
      }
      if (stopping.signal.aborted || (RosterError.isInstance(error) && error.code === 'database_closed')) {
        // Cut short by this process stopping: nothing of the turn was kept, and the person is not told an internal reason.
        log?.warn({ err: error }, 'a turn was cut short by the stop');
        return false;
      }
      log?.error({ err: error }, 'the turn failed');
      await send(event.target, RosterError.isInstance(error) ? error.message : failedTurn);
      return true;
    }
    stopTyping();
    if (result.duplicate) return true;
    if (result.person !== null) known.add(sender);
    await answer(event, result, stream);
    if (unread.length > 0 && result.person !== null) await send(event.target, cannotRead(describeMedia(unread)));
    return true;
  }

  /** Track a message's work until it is answered: a stop waits for it (see answersGraceMs). */
  function track(work: Promise<void>): void {
    const tracked: Promise<void> = work
      .catch((error: unknown) => log?.error({ err: error }, 'a message could not be handled'))
      .finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
  }

  /** Answer a message, then take it out of the inbox when it is done with (`id` null: it was not kept there). */
  async function answerTaken(id: string | null, event: ChannelEvent): Promise<void> {
    const done = await handle(event).catch((error: unknown) => {
      log?.error({ err: error }, 'a message could not be handled');
      return true;
    });
    if (!done || id === null) return;
    await core.inbox.done(id).catch((error: unknown) => log?.warn({ err: error }, 'an answered message stayed in the inbox: its next holder will find it answered'));
  }

  /**
   * Under a lease, a message is kept in the inbox before anything else, and
   * the adapter waits for that before it lets the platform count it
   * delivered; then it is answered. Resolves once it is kept.
   */
  function take(event: ChannelEvent): Promise<void> {
    const fence = options.fence;
    if (fence === undefined) {
      track(answerTaken(null, event));
      return Promise.resolve();
    }
    const kept = core.inbox
      .take(fence, { deliveryId: event.deliveryId, sender: event.inbound.sender.externalId ?? '', event: storable(event) })
      .then((id) => ({ id, error: null }), (error: unknown) => ({ id: null, error }));
    track(
      kept.then(({ id, error }) => {
        if (error === null && id === null) return log?.debug('a delivery already kept was dropped');
        if (RosterError.isInstance(error) && error.code === 'lease_lost') return log?.warn('a message was not taken: this gateway no longer holds the bot account');
        if (error !== null) log?.warn({ err: error }, 'a message could not be kept in the inbox: answering it all the same');
        return answerTaken(id, event);
      }),
    );
    return kept.then(() => undefined);
  }

  /**
   * What the last holder of the account took and did not answer (its stop
   * cut the turns short, or it was killed): answered now, in the order it was
   * taken, before anything new. Their files were not kept: the person is
   * asked to send them again.
   */
  async function answerWaiting(fence: MessageFence): Promise<void> {
    const waiting = await core.inbox.waiting(fence);
    for (const message of waiting) {
      const event = message.event === null ? null : restored(message.event);
      if (event !== null && deliveries.first(`${adapter.channel}:${adapter.account}:${event.deliveryId}`)) {
        track(answerTaken(message.id, event));
        continue;
      }
      // Its words were forgotten while it waited, or this gateway has it already: nothing to answer.
      await core.inbox.done(message.id);
    }
    if (waiting.length > 0) log?.info({ messages: waiting.length }, 'answering the messages the account’s last holder took and did not answer');
  }

  async function onApprovalPress(press: ApprovalPress): Promise<{ text: string; decided: boolean }> {
    if (options.approvals === undefined) return { text: 'Approvals are not taken on this channel.', decided: false };
    const person = await core.directory.personByIdentity(adapter.channel, press.sender.externalId);
    if (person === null || person.role !== 'owner') return { text: 'Only the owner decides on this; nothing changed.', decided: false };
    try {
      return { text: await options.approvals.decide(press.approvalId, press.decision, person), decided: true };
    } catch (error) {
      if (RosterError.isInstance(error)) return { text: error.message, decided: false };
      log?.error({ err: error }, 'an approval decision failed');
      return { text: failedTurn, decided: false };
    }
  }

  /** One push at a time, so that two never send the same approval twice. */
  let pushing: Promise<number> = Promise.resolve(0);
  function pushApprovals(): Promise<number> {
    const next = pushing.catch(() => 0).then(pushPending);
    pushing = next;
    return next;
  }

  async function pushPending(): Promise<number> {
    if (options.approvals === undefined) return 0;
    const pending = await options.approvals.pending(adapter.channel);
    if (pending.length === 0) return 0;
    const owners = await core.directory.ownerIdentities(adapter.channel);
    let sent = 0;
    for (const approval of pending) {
      for (const owner of owners) {
        const key = `${approval.id}:${owner.externalId}`;
        if (pushed.has(key) || (approval.pushedTo ?? []).includes(owner.externalId)) continue;
        const target: ChannelTarget = { chatId: owner.externalId, recipient: owner.externalId };
        // The whole text, always: earlier parts as plain messages, the last one with the buttons.
        const parts = splitText(`${approval.agent} proposes a lesson, to ride in every prompt it gets from now on:\n\n${approval.text}`, adapter.capabilities.textLimit);
        let delivered = true;
        for (const part of parts.slice(0, -1)) delivered &&= await deliver(target, () => adapter.sendText(target, part));
        delivered &&= await deliver(target, () => adapter.sendApproval(target, { id: approval.id, text: parts.at(-1)! }));
        if (delivered) {
          pushed.add(key);
          await options.approvals.markPushed(approval.id, adapter.channel, owner.externalId).catch((error: unknown) => log?.error({ err: error }, 'could not record an approval as pushed'));
          sent += parts.length;
        }
      }
    }
    return sent;
  }

  await adapter.start({
    signal: stopping.signal,
    ...(options.onStopped === undefined ? {} : { onStopped: options.onStopped }),
    onApprovalPress,
    onMessage(event) {
      if (!deliveries.first(`${adapter.channel}:${adapter.account}:${event.deliveryId}`)) {
        log?.debug('a redelivered update was dropped');
        return Promise.resolve();
      }
      // In a group, what is not for the bot is neither kept nor answered.
      if (!forTheBot(event)) return Promise.resolve();
      return take(event);
    },
  });
  if (options.fence !== undefined) await answerWaiting(options.fence).catch((error: unknown) => log?.warn({ err: error }, 'the messages left unanswered could not be read: they wait for the account’s next holder'));

  let poll: NodeJS.Timeout | undefined;
  if (options.approvals !== undefined && options.pushesApprovals !== false) {
    const run = () => void pushApprovals().catch((error: unknown) => log?.error({ err: error }, 'pushing approvals failed'));
    run();
    poll = setInterval(run, options.approvalPollMs ?? 60_000);
    poll.unref();
  }
  log?.info('channel served');

  return {
    adapter,
    send,
    pushApprovals,
    async settled() {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
    answering: () => inFlight.size > 0,
    async stop() {
      if (poll !== undefined) clearInterval(poll);
      await adapter.stop();
      // Answers under way get up to answersGraceMs to finish; then waits (a 429's) and turns are cut short.
      const grace = new Promise((resolve) => setTimeout(resolve, answersGraceMs).unref());
      await Promise.race([Promise.allSettled([...inFlight]), grace]);
      stopping.abort();
      await Promise.allSettled([...inFlight, pushing]);
      log?.info('channel stopped');
    },
  };
}

function describeMedia(media: ChannelEvent['media']): string {
  const names: Record<ChannelEvent['media'][number], string> = { image: 'images', voice: 'voice notes', audio: 'audio', video: 'videos', file: 'files' };
  return [...new Set(media.map((kind) => names[kind]))].join(' or ');
}
