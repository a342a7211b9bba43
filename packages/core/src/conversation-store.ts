import { randomUUID } from 'node:crypto';
import { enqueue, isUuid, type Database, type OutboxJob, type Scope, type Transaction } from '@roster/db';
import { RosterError } from '@roster/errors';
import { redactSecrets } from '@roster/memory';
import type { Channel, Person } from './directory.js';
import type { StoredMessage } from './prompt.js';
import type { MessageFence, SourceMessage, TranscriptLine } from './types.js';

/** A bot account's binding: which agent it serves and who may talk to it. */
export interface Binding {
  id: string | null;
  agentId: string | null;
  policy: 'pairing' | 'allowlist' | 'open';
  allowlist: string[];
}

export interface ConversationRow {
  id: string;
  kind: 'dm' | 'group';
  mode: 'solo' | 'team';
  agent_id: string | null;
}

/**
 * Who may read a line of the transcript: `pair`, the person and one agent
 * alone; `conversation`, everyone in the conversation (a group, team mode).
 * Row-level security reads it (migrations/0008).
 */
export type Visibility = 'pair' | 'conversation';

/** How long one process may hold a conversation's turn before another may take it. */
const turnLeaseSeconds = 120;
const turnPollMs = 25;

/**
 * The transcript and the conversations it belongs to: every statement that
 * reads or writes `conversations` and `messages` for the core. Routing (before
 * the sender is known) runs as roster_ops; an agent's reading of its history
 * and its reply run in the agent's own scope, so Postgres decides what it sees.
 */
/**
 * Refuse to store for a door whose bot account's lease is no longer the one
 * it acts under (another gateway took the account over); the lease row stays
 * locked for share until the storing transaction ends. No fence: nothing to check.
 */
export async function checkFence(tx: Transaction, fence: MessageFence | undefined): Promise<void> {
  if (fence === undefined) return;
  const { rows } = await tx.query<{ holds: boolean }>('select roster_lease_holds($1, $2, $3, $4) as holds', [fence.channel, fence.account, fence.holder, fence.token]);
  if (rows[0]?.holds !== true) {
    throw new RosterError('lease_lost', `This gateway no longer holds the ${fence.channel} bot account (another one took it over): nothing was stored.`);
  }
}

export class ConversationStore {
  /** This process's name on the conversations whose turn it holds. */
  private readonly holder = randomUUID();

  constructor(private readonly database: Database) {}

  async bindingFor(tx: Transaction, channel: Channel, account: string): Promise<Binding> {
    const { rows } = await tx.query<{ id: string; agent_id: string | null; policy: Binding['policy']; allowlist: string[] }>(
      'select id, agent_id, policy, allowlist from channel_bindings where channel = $1 and account = $2',
      [channel, account],
    );
    const row = rows[0];
    if (row !== undefined) return { id: row.id, agentId: row.agent_id, policy: row.policy, allowlist: row.allowlist };
    // The local doors serve the owner's people; a channel without a binding pairs first.
    return { id: null, agentId: null, policy: 'pairing', allowlist: [] };
  }

  async resolveSender(tx: Transaction, channel: Channel, sender: { personId?: string; externalId?: string }): Promise<Person | null> {
    if (sender.personId !== undefined) {
      const { rows } = await tx.query<Person>('select id, name, role from people where id = $1 and erased_at is null', [sender.personId]);
      if (rows[0] === undefined) throw new RosterError('person_not_found', 'No such person.');
      return rows[0];
    }
    if (sender.externalId === undefined) return null;
    // A person who writes can be reached again: an earlier refusal to deliver (a block) is cleared.
    const { rows } = await tx.query<Person>(
      `with sender as (
         update identities set unreachable_at = null where channel = $1 and external_id = $2 and unreachable_at is not null returning person_id
       )
       select p.id, p.name, p.role from identities i join people p on p.id = i.person_id where i.channel = $1 and i.external_id = $2`,
      [channel, sender.externalId],
    );
    return rows[0] ?? null;
  }

  /**
   * The conversation of an inbound message, made on first sight. A direct
   * conversation opened by a stranger records its person once they are linked.
   */
  async openConversation(
    tx: Transaction,
    input: { channel: Channel; externalId: string; kind: 'dm' | 'group'; binding: Binding; person: Person | null },
  ): Promise<ConversationRow> {
    const { rows } = await tx.query<ConversationRow>(
      `insert into conversations as c (channel, external_id, kind, binding_id, person_id, agent_id)
       values ($1, $2, $3, $4, $5, $6)
       on conflict (channel, external_id) do update
         set person_id = case when c.kind = 'dm' then coalesce(c.person_id, excluded.person_id) else c.person_id end
       returning id, kind, mode, agent_id`,
      [input.channel, input.externalId, input.kind, input.binding.id, input.kind === 'dm' ? input.person?.id ?? null : null, input.binding.agentId],
    );
    return rows[0]!;
  }

  /**
   * Store a message once: a redelivery (same platform id in the same
   * conversation) returns the first copy and `duplicate: true`. Secrets are
   * redacted before the row is written.
   */
  async storeMessage(
    tx: Transaction,
    message: {
      conversationId: string;
      externalId: string | null;
      role: 'person' | 'agent' | 'system';
      personId: string | null;
      agentId: string | null;
      text: string;
      visibility: Visibility;
      untrusted?: boolean;
    },
  ): Promise<{ id: string; duplicate: boolean }> {
    const redacted = redactSecrets(message.text);
    // The conversation's last message time moves with the message, in the same statement.
    const { rows } = await tx.query<{ id: string }>(
      `with inserted as (
         insert into messages (conversation_id, external_id, role, person_id, agent_id, content, redacted, untrusted, visibility)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         on conflict (conversation_id, external_id) do nothing
         returning id
       ), touched as (
         update conversations set last_message_at = now() where id = $1 and exists (select 1 from inserted)
       )
       select id from inserted`,
      [
        message.conversationId,
        message.externalId,
        message.role,
        message.personId,
        message.agentId,
        redacted.text,
        redacted.kinds.length > 0,
        message.untrusted === true,
        message.visibility,
      ],
    );
    if (rows[0] !== undefined) return { id: rows[0].id, duplicate: false };
    const existing = await tx.query<{ id: string }>('select id from messages where conversation_id = $1 and external_id = $2', [
      message.conversationId,
      message.externalId,
    ]);
    return { id: existing.rows[0]!.id, duplicate: true };
  }

  /** Once the agents are chosen: a one-to-one message to one agent becomes that pair's alone. */
  async addressMessage(messageId: string, address: { agentId: string | null; visibility: Visibility }): Promise<void> {
    await this.database.adminScope('core: address an inbound message', (tx) =>
      tx.query('update messages set agent_id = $2, visibility = $3 where id = $1', [messageId, address.agentId, address.visibility]),
    );
  }

  /** `/agent NAME`: the conversation talks to this agent alone from now on (team mode ends). */
  async switchAgent(conversationId: string, agentId: string): Promise<void> {
    await this.database.adminScope('core: switch the conversation’s agent', (tx) =>
      tx.query(`update conversations set agent_id = $2, mode = 'solo' where id = $1`, [conversationId, agentId]),
    );
  }

  /** `/team`: every active agent answers in this conversation from now on, until an `/agent NAME`. */
  async switchToTeam(conversationId: string): Promise<void> {
    await this.database.adminScope('core: switch the conversation to the team', (tx) =>
      tx.query(`update conversations set mode = 'team' where id = $1`, [conversationId]),
    );
  }

  /** A notice from Roster itself (a /agent switch), kept in the transcript for everyone there. */
  async storeNotice(conversationId: string, personId: string | null, text: string, fence?: MessageFence): Promise<void> {
    await this.database.adminScope('core: store a notice', async (tx) => {
      await checkFence(tx, fence);
      await this.storeMessage(tx, { conversationId, externalId: null, role: 'system', personId, agentId: null, text, visibility: 'conversation' });
    });
  }

  /**
   * A message the access policy refused is not kept: only a count per
   * channel account and day, which holds no words and no handle.
   */
  async countRefused(channel: Channel, account: string): Promise<void> {
    await this.database.adminScope('core: count a refused message', (tx) =>
      tx.query(
        `insert into refused_messages (channel, account, day, count) values ($1, $2, current_date, 1)
         on conflict (channel, account, day) do update set count = refused_messages.count + 1`,
        [channel, account],
      ),
    );
  }

  /**
   * The recent history an agent may see, read inside its own scope: its own
   * exchanges with this person and what was said to everyone in this
   * conversation. Row-level security enforces it; the query only orders it.
   */
  async history(scope: Scope, beforeMessageId: string, limit = 40): Promise<StoredMessage[]> {
    if (scope.conversationId === undefined || scope.conversationId === null) return [];
    return this.database.withScope(scope, async (tx) => {
      const { rows } = await tx.query<{
        role: StoredMessage['role'];
        content: string;
        person_name: string | null;
        agent_id: string | null;
        agent_name: string | null;
      }>(
        `select m.role, m.content, p.name as person_name, m.agent_id, a.name as agent_name
         from messages m left join people p on p.id = m.person_id left join agents a on a.id = m.agent_id
         where m.conversation_id = $1 and m.forgotten_at is null and m.id <> $2 and m.role in ('person', 'agent')
           and m.created_at <= coalesce((select created_at from messages where id = $2), now())
         order by m.created_at desc, m.id desc limit $3`,
        [scope.conversationId, beforeMessageId, limit],
      );
      return rows.reverse().map((row) => ({
        role: row.role,
        content: row.content,
        // An agent's reply names the agent; a person's line names the person.
        personName: row.role === 'person' ? row.person_name : null,
        agentId: row.agent_id,
        agentName: row.agent_name,
      }));
    });
  }

  /** A person's own conversation on a channel, oldest first (see `Core.transcript`). */
  async transcript(input: { channel: Channel; externalId: string; personId: string; limit: number }): Promise<{ conversationId: string; lines: TranscriptLine[] } | null> {
    return this.database.adminScope('core: read a person’s own transcript', async (tx) => {
      const conversation = await tx.query<{ id: string }>('select id from conversations where channel = $1 and external_id = $2 and person_id = $3', [
        input.channel,
        input.externalId,
        input.personId,
      ]);
      const id = conversation.rows[0]?.id;
      if (id === undefined) return null;
      // Their own lines, and answers to them (a team conversation of one person holds nobody else's).
      const { rows } = await tx.query<{ id: string; role: TranscriptLine['role']; agent: string | null; content: string; forgotten: boolean; created_at: Date }>(
        `select m.id, m.role, a.name as agent, case when m.forgotten_at is null then m.content else '' end as content,
                m.forgotten_at is not null as forgotten, m.created_at
           from messages m left join agents a on a.id = m.agent_id
          where m.conversation_id = $1 and m.role in ('person', 'agent', 'system') and (m.person_id = $2 or m.person_id is null)
          order by m.created_at desc, m.id desc limit $3`,
        [id, input.personId, input.limit],
      );
      return {
        conversationId: id,
        lines: rows.reverse().map((row) => ({ id: row.id, role: row.role, agent: row.role === 'agent' ? row.agent : null, text: row.content, forgotten: row.forgotten, at: row.created_at })),
      };
    });
  }

  /** The messages facts were drawn from, the words only of the reader's own lines (see `Core.sourceMessages`). */
  async sourceMessages(input: { ids: readonly string[]; personId: string }): Promise<SourceMessage[]> {
    const ids = [...new Set(input.ids)].filter(isUuid);
    if (ids.length === 0) return [];
    return this.database.adminScope('core: the source messages of facts a person reads', async (tx) => {
      const { rows } = await tx.query<{
        id: string;
        channel: SourceMessage['channel'];
        role: SourceMessage['role'];
        person_id: string | null;
        person_name: string | null;
        agent: string | null;
        created_at: Date;
        forgotten: boolean;
        own: boolean;
        content: string | null;
      }>(
        `select m.id, c.channel, m.role, m.person_id, p.name as person_name, a.name as agent, m.created_at,
                m.forgotten_at is not null as forgotten, m.person_id is not distinct from $2::uuid as own,
                case when m.forgotten_at is null and m.person_id = $2::uuid then m.content end as content
           from messages m join conversations c on c.id = m.conversation_id
           left join people p on p.id = m.person_id left join agents a on a.id = m.agent_id
          where m.id = any($1::uuid[])
          order by m.created_at, m.id`,
        [ids, input.personId],
      );
      return rows.map((row) => ({
        id: row.id,
        channel: row.channel,
        role: row.role,
        person: row.person_id === null ? null : { id: row.person_id, name: row.person_name ?? '' },
        agent: row.role === 'agent' ? row.agent : null,
        at: row.created_at,
        forgotten: row.forgotten,
        own: row.own,
        text: row.content,
      }));
    });
  }

  /**
   * An agent's reply, written in its own scope (a stranger's conversation has
   * none: roster_ops writes it), with what `alongside` writes (its follow-up
   * jobs) in the same transaction: a reply is never kept without them.
   */
  async storeReply(
    scope: Scope | null,
    reply: { conversationId: string; agentId: string; text: string; visibility: Visibility },
    alongside?: (tx: Transaction) => Promise<void>,
  ): Promise<string> {
    const row = { conversationId: reply.conversationId, externalId: null, role: 'agent' as const, agentId: reply.agentId, text: reply.text };
    if (scope === null) {
      return this.database.adminScope('core: store a reply to a guest', async (tx) => {
        const stored = await this.storeMessage(tx, { ...row, personId: null, visibility: 'conversation' });
        await alongside?.(tx);
        return stored.id;
      });
    }
    return this.database.withScope(scope, async (tx) => {
      const stored = await this.storeMessage(tx, { ...row, personId: scope.personId, visibility: reply.visibility });
      await alongside?.(tx);
      return stored.id;
    });
  }

  /**
   * Take a conversation's turn for this process, if no other holds it: a
   * gateway and a server (or two gateways) handling the same conversation
   * take turns. A lease in the conversation's row, not an advisory lock,
   * because the embedded database is one session shared by every process
   * that reaches it.
   */
  async takeTurn(tx: Transaction, conversationId: string): Promise<boolean> {
    const taken = await tx.query(
      `update conversations set turn_holder = $2, turn_expires_at = now() + make_interval(secs => $3)
       where id = $1 and (turn_holder is null or turn_holder = $2 or turn_expires_at < now())
       returning id`,
      [conversationId, this.holder, turnLeaseSeconds],
    );
    return (taken.rowCount ?? 0) > 0;
  }

  /** Wait until this process holds the conversation's turn (unless it already does); returns its release. */
  async holdTurn(conversationId: string, held: boolean, signal?: AbortSignal): Promise<() => Promise<void>> {
    while (!held) {
      if (signal?.aborted === true) throw new RosterError('turn_aborted', 'The turn was cancelled while waiting for the conversation.');
      await new Promise((resolve) => setTimeout(resolve, turnPollMs));
      held = await this.database.adminScope('core: take a conversation’s turn', (tx) => this.takeTurn(tx, conversationId));
    }
    return async () => {
      await this.database.adminScope('core: release a conversation’s turn', (tx) =>
        tx.query('update conversations set turn_holder = null, turn_expires_at = null where id = $1 and turn_holder = $2', [conversationId, this.holder]),
      );
    };
  }

  /** A job written with the change that needs it, in the caller's scope; relayed to the queues later. */
  async enqueue(tx: Transaction, job: OutboxJob): Promise<void> {
    await enqueue(tx, job);
  }
}
