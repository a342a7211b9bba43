import type { Transaction } from '@roster/db';
import { RosterError } from '@roster/errors';
import type { Binding, ConversationRow } from './conversation-store.js';
import type { Agent, Channel, Person } from './directory.js';

/** What routing an inbound message found, in one statement. */
export interface Routed {
  binding: Binding;
  person: Person | null;
  /** The conversation, opened or found, when the sender is let in; null when nothing of theirs is kept. */
  conversation: ConversationRow | null;
  /** Whether this process took the conversation's turn in the same statement. */
  held: boolean;
  /** The active agents, by name: who may answer. */
  active: Agent[];
  /** The agent the door named (`TurnOptions.agent`), active or archived; null when none was named or none has that name. */
  named: Agent | null;
}

export interface RouteInput {
  channel: Channel;
  account: string;
  sender: { personId?: string; externalId?: string };
  conversation: { externalId: string; kind: 'dm' | 'group' };
  /** The web page and the CLI let in only known people. */
  local: boolean;
  /** The message is a link code: redeemed, never kept. */
  linkCode: boolean;
  /** The agent the door names, if any. */
  agentName: string | null;
  /** This process's name on the turns it holds, and how long it may hold one. */
  holder: string;
  leaseSeconds: number;
}

/**
 * Route an inbound message in one statement, as roster_ops: the binding of
 * the bot account (pairing when none), the sender (a person named by id, or
 * the person tied to the channel identity, whose earlier block is cleared),
 * the conversation opened for a sender let in (a person, or anyone an open or
 * allowlist policy admits; never a link code) with this process's turn taken
 * when it is free, and the agents who may answer.
 *
 * A turn is free when nobody holds it, this process does, its lease lapsed,
 * or its reply was stored: a reply moves `last_message_at` past the moment
 * the turn was taken (its lease's expiry less the lease), which the inbound
 * message, stored in the taking transaction, does not (the same `now()`).
 */
export async function routeInbound(tx: Transaction, input: RouteInput): Promise<Routed> {
  const lease = `make_interval(secs => $9)`;
  const free = `c.turn_holder is null or c.turn_holder = excluded.turn_holder or c.turn_expires_at < now() or c.last_message_at > c.turn_expires_at - ${lease}`;
  const { rows } = await tx.query<{ binding: Binding & { agent_id: string | null } | null; person: Person | null; conversation: (ConversationRow & { held: boolean }) | null; active: Array<Record<string, unknown>>; named: Record<string, unknown> | null }>(
    `with binding as (
       select b.id, b.agent_id, b.policy, b.allowlist from channel_bindings b where b.channel = $1 and b.account = $2
     ),
     reached as (
       update identities set unreachable_at = null
       where $3::uuid is null and channel = $1 and external_id = $4 and unreachable_at is not null
       returning person_id
     ),
     sender as (
       select p.id, p.name, p.role from people p where p.id = $3::uuid and p.erased_at is null
       union all
       select p.id, p.name, p.role from identities i join people p on p.id = i.person_id
       where $3::uuid is null and i.channel = $1 and i.external_id = $4 and p.erased_at is null
     ),
     admitted as (
       select (select s.id from sender s limit 1) as person_id,
              coalesce((select b.policy from binding b), 'pairing') as policy,
              coalesce((select b.allowlist from binding b), '{}') as allowlist
     ),
     opened as (
       insert into conversations as c (channel, external_id, kind, binding_id, person_id, agent_id, turn_holder, turn_expires_at)
       select $1, $5, $6, (select b.id from binding b), case when $6::text = 'dm' then a.person_id end, (select b.agent_id from binding b), $8::uuid, now() + ${lease}
       from admitted a
       where not $10::boolean
         and (a.person_id is not null or (not $11::boolean and (a.policy = 'open' or (a.policy = 'allowlist' and coalesce($4, '') = any(a.allowlist)))))
       on conflict (channel, external_id) do update
         set person_id = case when c.kind = 'dm' then coalesce(c.person_id, excluded.person_id) else c.person_id end,
             turn_holder = case when ${free} then excluded.turn_holder else c.turn_holder end,
             turn_expires_at = case when ${free} then excluded.turn_expires_at else c.turn_expires_at end
       returning c.id, c.kind, c.mode, c.agent_id, c.turn_holder = $8::uuid as held
     )
     select (select to_jsonb(b) from binding b) as binding,
            (select to_jsonb(s) from sender s limit 1) as person,
            (select to_jsonb(o) from opened o) as conversation,
            coalesce((select jsonb_agg(to_jsonb(a) order by lower(a.name)) from agents a where a.status = 'active'), '[]'::jsonb) as active,
            (select to_jsonb(a) from agents a where $7::text is not null and lower(a.name) = lower($7::text) and a.status <> 'purged') as named`,
    [
      input.channel,
      input.account,
      input.sender.personId ?? null,
      input.sender.externalId ?? null,
      input.conversation.externalId,
      input.conversation.kind,
      input.agentName?.trim().normalize('NFC') ?? null,
      input.holder,
      input.leaseSeconds,
      input.linkCode,
      input.local,
    ],
  );
  const row = rows[0]!;
  if (input.sender.personId !== undefined && row.person === null) throw new RosterError('person_not_found', 'No such person.');
  const binding: Binding =
    row.binding === null
      ? { id: null, agentId: null, policy: 'pairing', allowlist: [] }
      : { id: row.binding.id, agentId: row.binding.agent_id, policy: row.binding.policy, allowlist: row.binding.allowlist };
  const conversation = row.conversation === null ? null : { id: row.conversation.id, kind: row.conversation.kind, mode: row.conversation.mode, agent_id: row.conversation.agent_id };
  return {
    binding,
    person: row.person === null ? null : { id: row.person.id, name: row.person.name, role: row.person.role },
    conversation,
    held: row.conversation?.held === true,
    active: row.active.map(agentFromJson),
    named: row.named === null ? null : agentFromJson(row.named),
  };
}

/** An agents row as to_jsonb gives it: its time as text. */
function agentFromJson(row: Record<string, unknown>): Agent {
  return {
    id: row.id as string,
    name: row.name as string,
    job: row.job as string,
    instructions: row.instructions as string,
    engine: row.engine as string,
    status: row.status as Agent['status'],
    createdAt: new Date(row.created_at as string),
  };
}
