import { randomInt } from 'node:crypto';
import type { Channel } from '@roster/contracts';
import type { Database, Transaction } from '@roster/db';
import { RosterError } from '@roster/errors';
import type { Agent, ChannelBinding, Directory, Person } from './directory-types.js';
import { InvalidInputError, NotFoundError } from './errors.js';

export type { Agent, ChannelBinding, Directory, Identity, Person } from './directory-types.js';
export type { Channel } from '@roster/contracts';

interface AgentRow {
  id: string;
  name: string;
  job: string;
  instructions: string;
  engine: string;
  status: 'active' | 'archived' | 'purged';
  created_at: Date;
}

const toAgent = (row: AgentRow): Agent => ({
  id: row.id,
  name: row.name,
  job: row.job,
  instructions: row.instructions,
  engine: row.engine,
  status: row.status,
  createdAt: row.created_at,
});

/**
 * An agent's name, in the source form other patterns embed (`/agent NAME`): a
 * letter of any script, then up to 39 letters, marks, digits, - or _. Names
 * are compared in NFC and without regard to case.
 */
export const agentNameSource = '\\p{L}[\\p{L}\\p{M}\\p{N}_-]{0,39}';
const agentNamePattern = new RegExp(`^${agentNameSource}$`, 'u');

/** What an agent may be called: trimmed, NFC, checked against the pattern. */
function agentName(input: string): string {
  const name = input.trim().normalize('NFC');
  if (!agentNamePattern.test(name)) {
    throw new InvalidInputError(
      `An agent's name is a letter (of any script) then up to 39 letters, digits, - or _ (like Scout, Zoë or code-helper), got ${JSON.stringify(input)}.`,
    );
  }
  return name;
}
interface BindingRow {
  channel: Channel;
  account: string;
  agent: string | null;
  policy: ChannelBinding['policy'];
  allowlist: string[];
  bound_channels: string[];
}

const bindingSelect = 'select b.channel, b.account, a.name as agent, b.policy, b.allowlist, b.bound_channels from channel_bindings b left join agents a on a.id = b.agent_id';

const toBinding = (row: BindingRow): ChannelBinding => ({
  channel: row.channel,
  account: row.account,
  agent: row.agent,
  policy: row.policy,
  allowlist: row.allowlist,
  boundChannels: row.bound_channels,
});

function bindingAccount(input: string | undefined): string {
  const account = (input ?? 'default').trim();
  if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(account)) throw new InvalidInputError(`An account is 1 to 64 letters, digits, _ . : or -, got ${JSON.stringify(input)}.`);
  return account;
}

/**
 * Bound rooms as stored: without repeats, at most 100, none empty or with a
 * comma. What an id looks like is the channel's own business: its plugin
 * (`boundRooms.check`) checks them before they reach the directory.
 */
function checkBoundChannels(channelIds: readonly string[]): string[] {
  const ids = [...new Set(channelIds.map((id) => id.trim()))];
  const wrong = ids.find((id) => id === '' || id.includes(',') || id.length > 255);
  if (wrong !== undefined) throw new InvalidInputError(`A bound room is named by its id: 1 to 255 characters without a comma, got ${JSON.stringify(wrong)}.`);
  if (ids.length > maxBoundRooms) throw new InvalidInputError(`A bot has at most ${maxBoundRooms} bound rooms, got ${ids.length}.`);
  return ids;
}

/** The most bound rooms one bot has (the schema's bound as well). */
const maxBoundRooms = 100;

/** Link codes avoid letters and digits that read alike (0/O, 1/I). */
const linkAlphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
export const linkCodeLifetimeMs = 60 * 60 * 1000;
export const maxPendingLinkCodes = 3;


export function createDirectory(database: Database, options: { defaultEngine?: string } = {}): Directory {
  const defaultEngine = options.defaultEngine ?? 'offline';

  async function findAgent(tx: Transaction, name: string): Promise<Agent> {
    const { rows } = await tx.query<AgentRow>(`select * from agents where lower(name) = lower($1) and status <> 'purged'`, [name.trim().normalize('NFC')]);
    if (rows[0] === undefined) throw new NotFoundError('agent_not_found', `No agent named ${JSON.stringify(name)}. roster agent list shows them.`);
    return toAgent(rows[0]);
  }

  async function findPerson(tx: Transaction, name: string): Promise<Person> {
    const { rows } = await tx.query<Person>('select id, name, role from people where lower(name) = lower($1)', [name.trim().normalize('NFC')]);
    if (rows[0] === undefined) throw new NotFoundError('person_not_found', `No person named ${JSON.stringify(name)}. roster person add ${name} adds one.`);
    return rows[0];
  }

  async function tieIdentity(tx: Transaction, personId: string, channel: Channel, externalId: string, displayName?: string): Promise<string> {
    const existing = await tx.query<{ id: string; person_id: string }>('select id, person_id from identities where channel = $1 and external_id = $2', [channel, externalId]);
    const row = existing.rows[0];
    if (row !== undefined) {
      if (row.person_id !== personId) {
        throw new RosterError('identity_taken', `That ${channel} handle already belongs to someone else; people are never merged silently. The owner can unlink it first.`);
      }
      return row.id;
    }
    const { rows } = await tx.query<{ id: string }>(
      'insert into identities (person_id, channel, external_id, display_name) values ($1, $2, $3, $4) returning id',
      [personId, channel, externalId, displayName ?? null],
    );
    return rows[0]!.id;
  }

  return {
    async addAgent(input) {
      const name = agentName(input.name);
      const job = input.job.trim();
      if (job.length === 0 || job.length > 500) throw new InvalidInputError('An agent needs a job sentence of 1 to 500 characters, like "finds and checks sources".');
      return database.adminScope('owner: add an agent', async (tx) => {
        const taken = await tx.query(`select 1 from agents where lower(name) = lower($1) and status <> 'purged'`, [name]);
        if (taken.rows.length > 0) throw new RosterError('agent_exists', `An agent named ${name} already exists.`);
        const { rows } = await tx.query<AgentRow>(
          'insert into agents (name, job, engine, instructions) values ($1, $2, $3, $4) returning *',
          [name, job, input.engine ?? defaultEngine, input.instructions ?? ''],
        );
        return toAgent(rows[0]!);
      });
    },

    async listAgents(options = {}) {
      return database.adminScope('owner: list agents', async (tx) => {
        const { rows } = await tx.query<AgentRow>(
          `select * from agents where ($1 and status = 'archived') or status = 'active' order by lower(name)`,
          [options.includeArchived === true],
        );
        return rows.map(toAgent);
      });
    },

    agentByName: (name) => database.adminScope('owner: find an agent', (tx) => findAgent(tx, name)),

    async agentById(id) {
      return database.adminScope('core: load an agent', async (tx) => {
        const { rows } = await tx.query<AgentRow>('select * from agents where id = $1', [id]);
        if (rows[0] === undefined) throw new NotFoundError('agent_not_found', `No agent ${id}.`);
        return toAgent(rows[0]);
      });
    },

    async archiveAgent(name) {
      return database.adminScope('owner: archive an agent', async (tx) => {
        const agent = await findAgent(tx, name);
        const { rows } = await tx.query<AgentRow>(`update agents set status = 'archived', updated_at = now() where id = $1 returning *`, [agent.id]);
        return toAgent(rows[0]!);
      });
    },

    async restoreAgent(name) {
      return database.adminScope('owner: restore an agent', async (tx) => {
        const agent = await findAgent(tx, name);
        if (agent.status === 'active') throw new RosterError('agent_active', `${agent.name} is not archived; there is nothing to restore.`);
        const { rows } = await tx.query<AgentRow>(`update agents set status = 'active', updated_at = now() where id = $1 returning *`, [agent.id]);
        return toAgent(rows[0]!);
      });
    },

    async renameAgent(name, newName) {
      const next = agentName(newName);
      return database.adminScope('owner: rename an agent', async (tx) => {
        const agent = await findAgent(tx, name);
        const taken = await tx.query<{ name: string }>(`select name from agents where lower(name) = lower($1) and id <> $2 and status <> 'purged'`, [next, agent.id]);
        if (taken.rows[0] !== undefined) {
          throw new RosterError('agent_exists', `The name ${next} is taken by the agent ${taken.rows[0].name} (names are unique whatever their case); choose another.`);
        }
        const { rows } = await tx.query<AgentRow>('update agents set name = $2, updated_at = now() where id = $1 returning *', [agent.id, next]);
        return toAgent(rows[0]!);
      });
    },

    async updateAgent(name, changes) {
      const job = changes.job?.trim();
      if (job !== undefined && (job.length === 0 || job.length > 500)) throw new InvalidInputError('An agent needs a job sentence of 1 to 500 characters, like "finds and checks sources".');
      const engine = changes.engine?.trim();
      if (engine !== undefined && engine.length === 0) throw new InvalidInputError('An engine reference is not empty: offline, openai:<model>, anthropic:<model>, openai-compatible:<base-url>#<model>.');
      return database.adminScope('owner: change an agent', async (tx) => {
        const agent = await findAgent(tx, name);
        const { rows } = await tx.query<AgentRow>(
          'update agents set job = coalesce($2, job), engine = coalesce($3, engine), updated_at = now() where id = $1 returning *',
          [agent.id, job ?? null, engine ?? null],
        );
        return toAgent(rows[0]!);
      });
    },

    async addPerson(input) {
      const name = input.name.trim().normalize('NFC');
      if (name.length === 0 || name.length > 80 || /[\u0000-\u001f]/.test(name)) {
        throw new InvalidInputError('A person needs a name of 1 to 80 printable characters.');
      }
      const role = input.role ?? 'member';
      if (!['owner', 'member', 'guest'].includes(role)) throw new InvalidInputError(`A role is owner, member or guest, got ${JSON.stringify(role)}.`);
      return database.adminScope('owner: add a person', async (tx) => {
        const taken = await tx.query('select 1 from people where lower(name) = lower($1)', [name]);
        if (taken.rows.length > 0) throw new RosterError('person_exists', `A person named ${name} already exists.`);
        const { rows } = await tx.query<Person>('insert into people (name, role) values ($1, $2) returning id, name, role', [name, role]);
        return rows[0]!;
      });
    },

    listPeople: () =>
      database.adminScope('owner: list people', async (tx) => (await tx.query<Person>('select id, name, role from people where erased_at is null order by lower(name)')).rows),

    firstOwner: () =>
      database.adminScope('owner: find the first owner', async (tx) => {
        const { rows } = await tx.query<Person>(`select id, name, role from people where role = 'owner' and erased_at is null order by created_at, id limit 1`);
        return rows[0] ?? null;
      }),

    async ensureFirstOwner() {
      return database.adminScope('owner: find or make the first owner', async (tx) => {
        // One maker at a time, so two first starts make one owner.
        await tx.query(`select pg_advisory_xact_lock(hashtextextended('roster.first_owner', 0))`);
        const { rows } = await tx.query<Person>(`select id, name, role from people where role = 'owner' and erased_at is null order by created_at, id limit 1`);
        if (rows[0] !== undefined) return { person: rows[0], created: false };
        const taken = await tx.query('select 1 from people where lower(name) = $1', ['owner']);
        if (taken.rows.length > 0) {
          throw new RosterError('person_exists', 'There is no owner yet, and a person named "owner" is not one: add an owner with roster person add NAME --role owner.');
        }
        const made = await tx.query<Person>(`insert into people (name, role) values ('owner', 'owner') returning id, name, role`);
        return { person: made.rows[0]!, created: true };
      });
    },

    personByName: (name) => database.adminScope('owner: find a person', (tx) => findPerson(tx, name)),

    async bindChannel(input) {
      const account = bindingAccount(input.account);
      const policy = input.policy ?? 'pairing';
      if (!['pairing', 'allowlist', 'open'].includes(policy)) throw new InvalidInputError(`A policy is pairing, allowlist or open, got ${JSON.stringify(policy)}.`);
      const allowlist = (input.allowlist ?? []).map((handle) => handle.trim()).filter((handle) => handle !== '');
      return database.adminScope('owner: bind a channel', async (tx) => {
        const agent = input.agent === undefined || input.agent === null ? null : await findAgent(tx, input.agent);
        // The bound channels are set on their own (setBoundChannels): binding again keeps them.
        const { rows } = await tx.query<{ bound_channels: string[] }>(
          `insert into channel_bindings (channel, account, agent_id, policy, allowlist) values ($1, $2, $3, $4, $5)
           on conflict (channel, account) do update set agent_id = excluded.agent_id, policy = excluded.policy, allowlist = excluded.allowlist
           returning bound_channels`,
          [input.channel, account, agent?.id ?? null, policy, allowlist],
        );
        return { channel: input.channel, account, agent: agent?.name ?? null, policy, allowlist, boundChannels: rows[0]!.bound_channels };
      });
    },

    async setBoundChannels(channel, channelIds, accountName) {
      const account = bindingAccount(accountName);
      const ids = checkBoundChannels(channelIds);
      return database.adminScope('owner: bind the rooms where every message is for the bot', async (tx) => {
        await tx.query(
          `insert into channel_bindings (channel, account, bound_channels) values ($1, $2, $3)
           on conflict (channel, account) do update set bound_channels = excluded.bound_channels`,
          [channel, account, ids],
        );
        const { rows } = await tx.query<BindingRow>(`${bindingSelect} where b.channel = $1 and b.account = $2`, [channel, account]);
        return toBinding(rows[0]!);
      });
    },

    listBindings: () =>
      database.adminScope('owner: list channel bindings', async (tx) => {
        const { rows } = await tx.query<BindingRow>(`${bindingSelect} order by b.channel, b.account`);
        return rows.map(toBinding);
      }),

    unbindChannel: (channel, account = 'default') =>
      database.adminScope('owner: unbind a channel', async (tx) => {
        // Conversations keep their history; they no longer point at the binding.
        const binding = await tx.query<{ id: string }>('select id from channel_bindings where channel = $1 and account = $2', [channel, account]);
        const id = binding.rows[0]?.id;
        if (id === undefined) return false;
        await tx.query('update conversations set binding_id = null where binding_id = $1', [id]);
        const { rowCount } = await tx.query('delete from channel_bindings where id = $1', [id]);
        return (rowCount ?? 0) > 0;
      }),

    personByIdentity: (channel, externalId) =>
      database.adminScope('core: find the person of a channel handle', async (tx) => {
        const { rows } = await tx.query<Person>(
          'select p.id, p.name, p.role from identities i join people p on p.id = i.person_id where i.channel = $1 and i.external_id = $2',
          [channel, externalId],
        );
        return rows[0] ?? null;
      }),

    ownerIdentities: (channel) =>
      database.adminScope('core: find the owners on a channel', async (tx) => {
        const { rows } = await tx.query<Person & { external_id: string }>(
          `select p.id, p.name, p.role, i.external_id from identities i join people p on p.id = i.person_id
           where i.channel = $1 and p.role = 'owner' and i.unreachable_at is null order by p.created_at, i.created_at`,
          [channel],
        );
        return rows.map((row) => ({ person: { id: row.id, name: row.name, role: row.role }, externalId: row.external_id }));
      }),

    markUnreachable: (channel, externalId) =>
      database.adminScope('core: mark a channel handle unreachable', async (tx) => {
        const { rowCount } = await tx.query('update identities set unreachable_at = now() where channel = $1 and external_id = $2', [channel, externalId]);
        return (rowCount ?? 0) > 0;
      }),

    async personById(id) {
      return database.adminScope('owner: find a person by id', async (tx) => {
        const { rows } = await tx.query<Person>('select id, name, role from people where id::text = $1 and erased_at is null', [id]);
        if (rows[0] === undefined) throw new NotFoundError('person_not_found', `No person ${id}.`);
        return rows[0];
      });
    },

    listIdentities: () =>
      database.adminScope('owner: list channel identities', async (tx) => {
        const { rows } = await tx.query<{ person_id: string; channel: Channel; external_id: string; display_name: string | null }>(
          'select person_id, channel, external_id, display_name from identities order by channel, external_id',
        );
        return rows.map((row) => ({ personId: row.person_id, channel: row.channel, externalId: row.external_id, displayName: row.display_name }));
      }),

    async linkIdentity(personId, channel, externalId, displayName) {
      await database.adminScope('owner: link a channel identity', (tx) => tieIdentity(tx, personId, channel, externalId, displayName));
    },

    async createLinkCode(personId) {
      return database.adminScope('owner: create a link code', async (tx) => {
        await tx.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [`roster.link_codes:${personId}`]);
        const pending = await tx.query<{ n: string }>(
          'select count(*) as n from link_codes where person_id = $1 and used_at is null and expires_at > now()',
          [personId],
        );
        if (Number(pending.rows[0]!.n) >= maxPendingLinkCodes) {
          throw new RosterError('link_codes_exhausted', `There are already ${maxPendingLinkCodes} unused link codes for this person; use one or wait an hour.`);
        }
        const code = Array.from({ length: 8 }, () => linkAlphabet[randomInt(linkAlphabet.length)]).join('');
        const expiresAt = new Date(Date.now() + linkCodeLifetimeMs);
        await tx.query('insert into link_codes (code, person_id, expires_at) values ($1, $2, $3)', [code, personId, expiresAt]);
        return { code, expiresAt };
      });
    },

    async redeemLinkCode(code, channel, externalId, displayName) {
      const normalized = code.trim().toUpperCase();
      return database.adminScope('core: redeem a link code', async (tx) => {
        const { rows } = await tx.query<{ person_id: string; expires_at: Date; used_at: Date | null }>(
          'select person_id, expires_at, used_at from link_codes where code = $1 for update',
          [normalized],
        );
        const row = rows[0];
        if (row === undefined || row.used_at !== null || row.expires_at <= new Date()) {
          throw new RosterError('link_code_invalid', 'That link code is unknown, used or expired. Ask the owner for a new one.');
        }
        const identityId = await tieIdentity(tx, row.person_id, channel, externalId, displayName);
        await tx.query('update link_codes set used_at = now(), used_by_identity = $2 where code = $1', [normalized, identityId]);
        const person = await tx.query<Person>('select id, name, role from people where id = $1', [row.person_id]);
        return person.rows[0]!;
      });
    },
  };
}
