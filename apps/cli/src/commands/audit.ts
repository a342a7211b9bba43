import { RosterError } from '@roster/errors';
import { verifyAudit } from '@roster/memory';
import type { CommandIo } from '../io.js';
import { exitCode } from '../io.js';
import { parseCommand } from '../parse.js';
import { openRuntime } from '../runtime.js';

/** Recompute the memory event chains and name the first broken link of each. */
export async function runAuditVerify(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseCommand(args, { agent: { type: 'string' }, json: { type: 'boolean' } });
  const { database } = await openRuntime(io);
  try {
    const agents = await database.adminScope('audit verify: name the agents', async (tx) => {
      const { rows } = await tx.query<{ id: string; name: string }>('select id, name from agents order by name');
      return rows;
    });
    let agentId: string | undefined;
    if (typeof values.agent === 'string') {
      agentId = agents.find((agent) => agent.name.toLowerCase() === (values.agent as string).toLowerCase())?.id;
      if (agentId === undefined) throw new RosterError('agent_not_found', `No agent named ${JSON.stringify(values.agent)}. roster agent list shows them.`);
    }
    const reports = await verifyAudit(database, agentId);
    const named = reports.map((report) => ({ ...report, agent: agents.find((agent) => agent.id === report.agentId)?.name ?? report.agentId }));
    if (values.json === true) {
      io.out(JSON.stringify({ ok: named.every((report) => report.ok), chains: named }));
    } else if (named.length === 0) {
      io.out(agentId === undefined ? 'No memory events yet.' : `${values.agent}: no memory events yet.`);
    } else {
      const width = Math.max(...named.map((report) => report.agent.length));
      for (const report of named) {
        io.out(
          report.broken === null
            ? `${report.agent.padEnd(width)}  ok      ${report.events} events`
            : `${report.agent.padEnd(width)}  BROKEN  at event ${report.broken.seq} (${report.broken.id}): ${report.broken.problem}`,
        );
      }
    }
    return named.every((report) => report.ok) ? exitCode.ok : exitCode.failure;
  } finally {
    await database.close();
  }
}
