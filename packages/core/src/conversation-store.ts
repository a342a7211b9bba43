import { randomUUID } from 'node:crypto';
import { enqueue, isUuid, outboxInsertSql, outboxRows, type Database, type EraseJob, type OutboxJob, type Scope, type ScopedTransaction, type Transaction, type WriteAlong } from '@roster/db';
import { RosterError } from '@roster/errors';
import { redactSecrets } from '@roster/memory';
import type { Channel } from './directory.js';
import { routeInbound, type RouteInput, type Routed } from './route.js';
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

/** A follow-up job a change writes with itself (any queue's but the erase, which collects in one row). */
export type FollowUpJob = Exclude<OutboxJob, EraseJob>;

/**
 * How long one process may hold a conversation's turn before another may
 * take it. A turn renews it every `turnRenewMs` while its agents think, so a
 * long answer keeps it, and a process killed mid-turn holds it at most this
 * long.
 */
const turnLeaseSeconds = 30;
const turnRenewMs = 5_000;
const turnPollMs = 25;

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

/**
 * The transcript and the conversations it belongs to: every statement that
 * reads or writes `conversations` and `messages` for the core. Routing (before
 * the sender is known) runs as roster_ops; an agent's reading of its history
 * and its reply run in the agent's own scope, so Postgres decides what it sees.
 */
export class ConversationStore {
  /** This process's name on the conversations whose turn it holds. */
  private readonly holder = randomUUID();

  constructor(private readonly database: Database) {}

  /** Route an inbound message and take its conversation's turn, in one statement (see `routeInbound`). */
  route(tx: Transaction, input: Omit<RouteInput, 'holder' | 'leaseSeconds'>): Promise<Routed> {
    return routeInbound(tx, { ...input, holder: this.holder, leaseSeconds: turnLeaseSeconds });
  }

  /**
   * Store a message once: a redelivery (same platform id in the same
   * conversation) returns the first copy and `duplicate: true`. Secrets are
   * redacted before the row is written.
   *
   * A redelivery of a message that was stored but never answered (its turn
   * was cut off: the process killed or stopped between storing it and storing
   * the replies, so the platform, never told it was handled, sends it again)
   * is not a duplicate: it returns the first copy with `duplicate: false`,
   * and is answered now. Answered means a reply or a notice follows it before
   * the conversation's next message from a person, or its words were
   * forgotten. The caller holds the conversation's turn, so no turn of it is
   * under way elsewhere.
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
    options: { touch?: boolean; jobs?: readonly FollowUpJob[]; along?: readonly WriteAlong[] } = {},
  ): Promise<{ id: string; duplicate: boolean; carried?: number[] }> {
    const redacted = redactSecrets(message.text);
    const jobs = options.jobs ?? [];
    const along = options.along ?? [];
    const params: unknown[] = [
      message.conversationId,
      message.externalId,
      message.role,
      message.personId,
      message.agentId,
      redacted.text,
      redacted.kinds.length > 0,
      message.untrusted === true,
      message.visibility,
      options.touch !== false,
    ];
    // Each write that goes with the message: its parameter is the next one, and it runs only if the message was new.
    const written = (value: string, sql: (parameter: string) => string) => sql(`$${params.push(value)}`);
    const jobsSql = jobs.length === 0 ? '' : `, jobs as (${written(outboxRows(jobs), (parameter) => outboxInsertSql(parameter, 'exists (select 1 from inserted)'))})`;
    const alongSql = along.map((write, index) => `, along${index} as (${written(write.value, (parameter) => write.sql(parameter, 'exists (select 1 from inserted)'))})`).join('');
    // The conversation's last message time moves with the message (unless told not to: a team's replies, see
    // `releaseTurn`), and the jobs and writes that follow it are written, in the same statement.
    const { rows } = await tx.query<{ id: string }>(
      `with inserted as (
         insert into messages (conversation_id, external_id, role, person_id, agent_id, content, redacted, untrusted, visibility)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         on conflict (conversation_id, external_id) do nothing
         returning id
       ), touched as (
         update conversations set last_message_at = now() where id = $1 and $10::boolean and exists (select 1 from inserted)
       )${jobsSql}${alongSql}
       select id${along.map((_, index) => `, along${index}_rows.n as carried${index}`).join('')}
       from inserted${along.map((_, index) => ` cross join (select count(*) as n from along${index}) along${index}_rows`).join('')}`,
      params,
    );
    // Each carried write's rows: a conditional write that read none did not write.
    const row = rows[0] as ({ id: string } & Record<string, unknown>) | undefined;
    if (row !== undefined) return { id: row.id, duplicate: false, carried: along.map((_, index) => Number(row[`carried${index}`])) };
    const existing = await tx.query<{ id: string; answered: boolean }>(
      `select m.id, m.forgotten_at is not null or exists (
         select 1 from messages r
         where r.conversation_id = m.conversation_id and r.role in ('agent', 'system') and r.id <> m.id and r.created_at >= m.created_at
           and not exists (
             select 1 from messages p
             where p.conversation_id = m.conversation_id and p.role = 'person' and p.id <> m.id and p.created_at > m.created_at and p.created_at <= r.created_at
           )
       ) as answered
       from messages m where m.conversation_id = $1 and m.external_id = $2`,
      [message.conversationId, message.externalId],
    );
    const first = existing.rows[0]!;
    return { id: first.id, duplicate: first.answered };
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
   * none: roster_ops writes it), with its follow-up jobs and the writes
   * `along` (the turn's learning signals) in the same statement, and the one
   * `carry` makes (the uses of the facts the turn recalled), for which the
   * transaction opens with the agent's audit chain locked: a reply is never
   * kept without them. When that write wrote nothing, `carry.otherwise` runs
   * in the same transaction. Unless `touch` is false the reply ends the
   * conversation's turn (see `routeInbound`).
   */
  async storeReply(
    scope: Scope | null,
    reply: { conversationId: string; agentId: string; text: string; visibility: Visibility },
    options: { jobs: readonly FollowUpJob[]; touch: boolean; fence?: MessageFence; along?: readonly WriteAlong[] },
    carry?: { along: (tx: ScopedTransaction) => WriteAlong | null; otherwise: (tx: ScopedTransaction) => Promise<unknown> },
  ): Promise<string> {
    const row = { conversationId: reply.conversationId, externalId: null, role: 'agent' as const, agentId: reply.agentId, text: reply.text };
    if (scope === null) {
      // A guest has no memory and no learning: nothing is written alongside.
      return this.database.adminScope('core: store a reply to a guest', async (tx) => {
        await checkFence(tx, options.fence);
        const stored = await this.storeMessage(tx, { ...row, personId: null, visibility: 'conversation' }, { jobs: options.jobs, touch: options.touch });
        return stored.id;
      });
    }
    return this.database.withScope(
      scope,
      async (tx) => {
        await checkFence(tx, options.fence);
        const carried = carry?.along(tx) ?? null;
        const along = [...(options.along ?? []), ...(carried === null ? [] : [carried])];
        const stored = await this.storeMessage(tx, { ...row, personId: scope.personId, visibility: reply.visibility }, { ...options, along });
        if (carried !== null && stored.carried?.at(-1) === 0) await carry!.otherwise(tx);
        return stored.id;
      },
      carry === undefined ? undefined : { chainHeads: true },
    );
  }

  /**
   * Take a conversation's turn for this process, if it is free (see
   * `routeInbound`): a gateway and a server (or two gateways) handling the
   * same conversation take turns. A lease in the conversation's row, not an
   * advisory lock, because the embedded database is one session shared by
   * every process that reaches it. Returns the conversation when taken.
   */
  async takeTurn(tx: Transaction, conversationId: string): Promise<ConversationRow | null> {
    const { rows } = await tx.query<ConversationRow>(
      `update conversations c set turn_holder = $2, turn_expires_at = now() + make_interval(secs => $3)
       where id = $1 and (c.turn_holder is null or c.turn_holder = $2 or c.turn_expires_at < now()
         or c.last_message_at > c.turn_expires_at - make_interval(secs => $3))
       returning id, kind, mode, agent_id`,
      [conversationId, this.holder, turnLeaseSeconds],
    );
    return rows[0] ?? null;
  }

  /**
   * Wait until this process takes the conversation's turn, then run `then`
   * in the transaction that took it (the message is stored there, so that
   * the turn and the message are one).
   */
  async waitTurn<T>(conversationId: string, signal: AbortSignal | undefined, then: (tx: Transaction, conversation: ConversationRow) => Promise<T>): Promise<T> {
    for (;;) {
      if (signal?.aborted === true) throw new RosterError('turn_aborted', 'The turn was cancelled while waiting for the conversation.');
      await new Promise((resolve) => setTimeout(resolve, turnPollMs));
      const taken = await this.database.adminScope('core: take a conversation’s turn and store its message', async (tx) => {
        const conversation = await this.takeTurn(tx, conversationId);
        return conversation === null ? null : { value: await then(tx, conversation) };
      });
      if (taken !== null) return taken.value;
    }
  }

  /**
   * Keep this process's turn of a conversation while its agents think: the
   * lease is renewed every few seconds until `stop`, which the turn calls
   * before it stores its replies (a reply ends the turn; a renewal after it
   * would take the turn back, so `stop` waits for one under way). A renewal
   * that fails is let go: the lease then lapses, as a killed process's does.
   */
  keepTurn(conversationId: string): { stop(): Promise<void> } {
    let renewing: Promise<unknown> = Promise.resolve();
    const timer = setInterval(() => {
      renewing = this.database
        .adminScope('core: keep a conversation’s turn', (tx) =>
          tx.query(`update conversations set turn_expires_at = now() + make_interval(secs => $3) where id = $1 and turn_holder = $2 and turn_expires_at >= now()`, [
            conversationId,
            this.holder,
            turnLeaseSeconds,
          ]),
        )
        .catch(() => undefined);
    }, turnRenewMs);
    timer.unref();
    return {
      stop: async () => {
        clearInterval(timer);
        await renewing;
      },
    };
  }

  /** Let go of a conversation's turn; `touched`: a team's replies were stored, and the conversation's last message time moves. */
  async releaseTurn(conversationId: string, touched: boolean): Promise<void> {
    await this.database.adminScope('core: release a conversation’s turn', (tx) =>
      tx.query(
        `update conversations set turn_holder = null, turn_expires_at = null, last_message_at = case when $3 then now() else last_message_at end
         where id = $1 and turn_holder = $2`,
        [conversationId, this.holder, touched],
      ),
    );
  }

  /** A job written with the change that needs it, in the caller's scope; relayed to the queues later. */
  async enqueue(tx: Transaction, job: OutboxJob): Promise<void> {
    await enqueue(tx, job);
  }
}
