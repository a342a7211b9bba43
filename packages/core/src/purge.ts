import { enqueue, type Database, type Scope } from '@roster/db';
import { RosterError } from '@roster/errors';
import type { Memory } from '@roster/memory';
import type { Directory } from './directory.js';

/**
 * Purge an archived agent, after the owner typed its name: every fact is
 * forgotten in its own scope (tombstones and events as for any forget), then
 * roster_purge_agent erases the words of everything else the agent holds,
 * and queues the erase job that takes them off the disk.
 */
export async function purgeAgent(
  { database, memory, directory }: { database: Database; memory: Memory; directory: Directory },
  name: string,
  confirmation: string,
): Promise<{ facts: number; erased: Record<string, number> }> {
  const agent = await directory.agentByName(name);
  if (agent.status !== 'archived') throw new RosterError('agent_active', `Archive ${agent.name} first (roster agent archive ${agent.name}); only an archived agent can be purged.`);
  if (confirmation !== agent.name) throw new RosterError('purge_unconfirmed', `To purge ${agent.name}'s memory for good, confirm with its exact name: --confirm ${agent.name}.`);
  const facts = await database.adminScope('owner: list the facts of an agent to purge', async (tx) => {
    const { rows } = await tx.query<{ id: string; person_id: string | null }>(
      `select id, person_id from facts where agent_id = $1 and trust <> 'forgotten' order by recorded_at`,
      [agent.id],
    );
    return rows;
  });
  let forgotten = 0;
  const owner = { actor: { kind: 'owner' as const, id: 'purge' } };
  for (const fact of facts) {
    const scope: Scope = fact.person_id === null ? { agentId: agent.id, personId: null, audience: 'agent' } : { agentId: agent.id, personId: fact.person_id, audience: 'private' };
    try {
      await memory.forget(scope, fact.id, owner);
      forgotten += 1;
    } catch (error) {
      // Already forgotten as part of an identical fact's forget.
      if (!(RosterError.isInstance(error) && error.code === 'fact_state')) throw error;
    }
  }
  // Then every other copy of what the agent heard and said; its row stays, for the audit.
  const erased = await database.adminScope('owner: purge an agent', async (tx) => {
    const { rows } = await tx.query<{ counts: Record<string, number> }>('select roster_purge_agent($1) as counts', [agent.id]);
    const counts = rows[0]!.counts;
    // The files too: the erase job rewrites the tables the purge reached (with the erase its forgets queued, if still pending).
    await enqueue(tx, { queue: 'erase', payload: { tables: Object.keys(counts) } });
    await memory.audit.append(tx, { agentId: agent.id, personId: null, actor: owner.actor, action: 'purge', targetKind: 'agent', targetId: agent.id, detail: { facts: forgotten, erased: counts } });
    return counts;
  });
  return { facts: forgotten, erased };
}
