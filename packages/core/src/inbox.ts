import type { Database } from '@roster/db';
import { checkFence } from './conversation-store.js';
import type { MessageFence } from './types.js';

/** A message a gateway took and had not answered when it stopped. */
interface WaitingMessage {
  id: string;
  /** What the gateway stored: its event as taken, or null when a forget erased its words. */
  event: Record<string, unknown> | null;
}

/**
 * The messages a gateway has taken from a platform and not answered yet,
 * kept in the database (`channel_inbox`) before the platform counts them
 * delivered, so that a gateway stopped or killed in between loses none: the
 * next holder of the bot account answers what is left. Rows are written
 * under the account's lease (a gateway that lost it stores nothing) and live
 * for the length of a turn.
 */
export interface ChannelInbox {
  /**
   * Keep a message taken under `fence`. Resolves to its row's id, or null
   * when the same delivery is kept already (the platform sent it again).
   * Throws `lease_lost` when this gateway no longer holds the account.
   */
  take(fence: MessageFence, message: { deliveryId: string; sender: string; event: Record<string, unknown> }): Promise<string | null>;
  /** What is left for the account, in the order it was taken. */
  waiting(fence: MessageFence): Promise<WaitingMessage[]>;
  /** The message was answered (or needs no answer): its row goes. */
  done(id: string): Promise<void>;
}

export function createChannelInbox(database: Database): ChannelInbox {
  return {
    take(fence, message) {
      return database.adminScope('gateway: keep a message taken from the platform', async (tx) => {
        await checkFence(tx, fence);
        const { rows } = await tx.query<{ id: string }>(
          `insert into channel_inbox (channel, account, delivery_id, sender, event) values ($1, $2, $3, $4, $5)
           on conflict (channel, account, delivery_id) do nothing returning id::text`,
          [fence.channel, fence.account, message.deliveryId, message.sender, message.event],
        );
        return rows[0]?.id ?? null;
      });
    },
    waiting(fence) {
      return database.adminScope('gateway: the messages left unanswered for a bot account', async (tx) => {
        await checkFence(tx, fence);
        const { rows } = await tx.query<{ id: string; event: Record<string, unknown> }>(
          'select id::text, event from channel_inbox where channel = $1 and account = $2 order by id',
          [fence.channel, fence.account],
        );
        return rows.map((row) => ({ id: row.id, event: 'inbound' in row.event ? row.event : null }));
      });
    },
    async done(id) {
      await database.adminScope('gateway: a taken message was answered', (tx) => tx.query('delete from channel_inbox where id = $1', [id]));
    },
  };
}
