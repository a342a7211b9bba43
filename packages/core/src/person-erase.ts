import type { Database, Scope } from '@roster/db';
import { RosterError } from '@roster/errors';
import type { Actor, Memory } from '@roster/memory';
import type { Directory, Person } from './directory.js';

/** What a person's erasure did: counts by place, never a word nor a name. */
export interface PersonErasure {
  /** The person row kept, without its name, for the audit chains. */
  personId: string;
  /** Facts forgotten, each with a keyed tombstone and an audit event. */
  facts: number;
  /** Rows that lost the person's words or ties, by table (see roster_erase_person). */
  erased: Record<string, number>;
  /** Agents whose audit chain recorded the erasure. */
  agents: number;
}

export interface PersonEraseDeps {
  database: Database;
  directory: Directory;
  memory: Memory;
}

/** The tables the erasure rewrites, for the erase job that takes the bytes off the disk. */
const reachedTables = [
  'facts', 'fact_embeddings', 'messages', 'conversations', 'learning_events', 'mirror_cases', 'mirror_runs', 'episodes', 'approvals', 'lessons', 'outbox',
  'identities', 'link_codes', 'login_links', 'web_sessions', 'api_tokens', 'approval_pushes', 'channel_bindings', 'channel_inbox', 'people',
];

/** Names compared as a person types them: trimmed, composed, any letter case. */
const sameName = (a: string, b: string) => a.trim().normalize('NFC').toLowerCase() === b.trim().normalize('NFC').toLowerCase();

/**
 * Erase everything Roster holds about `person`, after the person's name was
 * typed again as `confirmation`: every fact about them with every agent is
 * forgotten as a forget does it (a keyed tombstone each, so nothing is
 * learned again from an old message, and the words erased from every copy),
 * then roster_erase_person forgets the rest (their lines and the replies to
 * them, learning events, mirror cases, episodes, lessons and approvals drawn
 * from their words, jobs naming them, their handles, link codes, sessions
 * and tokens) and takes the name off their row, which stays for the audit.
 * Each agent's audit chain records the erasure (ids and counts only), and
 * the erase job is queued that rewrites the tables and retires the WAL.
 *
 * Refused, changing nothing: a confirmation that is not the name, and the
 * last owner (the wallet would have no one to run it).
 */
export async function erasePerson({ database, directory, memory }: PersonEraseDeps, person: Person, confirmation: string, actor: Actor): Promise<PersonErasure> {
  if (!sameName(confirmation, person.name)) {
    throw new RosterError('erase_unconfirmed', `To erase everything Roster holds about ${person.name}, confirm with their name: --confirm ${person.name} (or --yes).`);
  }
  if (person.role === 'owner') {
    const owners = (await directory.listPeople()).filter((someone) => someone.role === 'owner' && someone.id !== person.id);
    if (owners.length === 0) throw new RosterError('last_owner', `${person.name} is the only owner: add another owner first (roster person add NAME --role owner), then erase ${person.name}.`);
  }
  const agents = await directory.listAgents({ includeArchived: true });
  const facts = await database.adminScope("owner: list the facts of a person to erase (ids only)", async (tx) => {
    const { rows } = await tx.query<{ id: string; agent_id: string }>(
      `select id, agent_id from facts where person_id = $1 and trust <> 'forgotten' order by recorded_at, id`,
      [person.id],
    );
    return rows;
  });
  let forgotten = 0;
  for (const fact of facts) {
    const scope: Scope = { agentId: fact.agent_id, personId: person.id, audience: 'private' };
    try {
      await memory.forget(scope, fact.id, { actor });
      forgotten += 1;
    } catch (error) {
      // Already forgotten with another version of its chain, or an identical fact.
      if (!(RosterError.isInstance(error) && error.code === 'fact_state')) throw error;
    }
  }
  const erased = await database.adminScope("owner: erase a person's data", async (tx) => {
    // The messages of theirs a gateway took and has not answered: gone with their handles.
    const waiting = await tx.query(
      'delete from channel_inbox i using identities d where d.person_id = $1 and d.channel = i.channel and d.external_id = i.sender',
      [person.id],
    );
    const { rows } = await tx.query<{ counts: Record<string, number> }>('select roster_erase_person($1) as counts', [person.id]);
    const counts = { ...rows[0]!.counts, channel_inbox: waiting.rowCount ?? 0 };
    await tx.query('select roster_queue_erase($1)', [reachedTables]);
    // Every agent's chain says that this person's data was erased: their random id and counts, no name, no words.
    for (const agent of agents) {
      if (agent.status === 'purged') continue;
      await memory.audit.append(tx, { agentId: agent.id, personId: person.id, actor, action: 'erase-person', targetKind: 'person', targetId: person.id, detail: { facts: forgotten, erased: counts } });
    }
    return counts;
  });
  return { personId: person.id, facts: forgotten, erased, agents: agents.filter((agent) => agent.status !== 'purged').length };
}
