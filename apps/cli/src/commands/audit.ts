import type { Database } from '@roster/db';
import { RosterError, UsageError } from '@roster/errors';
import { bindInstallationKey, createAuditLog, type AuditLog, type ChainHead } from '@roster/memory';
import type { CommandIo } from '../io.js';
import { exitCode } from '../io.js';
import { parseCommand } from '../parse.js';
import { openKeyedRuntime } from '../runtime.js';

/** A head as `roster audit head` prints it and `--expect` takes it: `SEQ:HASH`. */
const headPattern = /^([1-9]\d{0,15}):([0-9a-f]{64})$/;

interface AuditContext {
  database: Database;
  audit: AuditLog;
  agents: Array<{ id: string; name: string }>;
  /** The agent `--agent` names, or undefined for every agent. */
  agentId: string | undefined;
}

/** Open the database with the installation key (refused when it is not the database's), seal chains from before keying, and find the agent asked for. */
async function openAudit(io: CommandIo, agentName: string | boolean | undefined): Promise<AuditContext> {
  const { database, key } = await openKeyedRuntime(io);
  try {
    await bindInstallationKey(database, key);
    const audit = createAuditLog({ database, key });
    // Chains from before keying get their keyed seal first, as every process's memory gives them.
    await audit.seal();
    const agents = await database.adminScope('audit: name the agents', async (tx) => {
      const { rows } = await tx.query<{ id: string; name: string }>('select id, name from agents order by name');
      return rows;
    });
    let agentId: string | undefined;
    if (typeof agentName === 'string') {
      agentId = agents.find((agent) => agent.name.toLowerCase() === agentName.toLowerCase())?.id;
      if (agentId === undefined) throw new RosterError('agent_not_found', `No agent named ${JSON.stringify(agentName)}. roster agent list shows them.`);
    }
    return { database, audit, agents, agentId };
  } catch (error) {
    await database.close();
    throw error;
  }
}

const nameOf = (context: AuditContext, agentId: string): string => context.agents.find((agent) => agent.id === agentId)?.name ?? agentId;

/** Print where each memory event chain ends, so an operator can keep the heads elsewhere. */
export async function runAuditHead(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseCommand(args, { agent: { type: 'string' }, json: { type: 'boolean' } });
  const context = await openAudit(io, values.agent);
  try {
    const heads = (await context.audit.heads(context.agentId)).map((head) => ({ agent: nameOf(context, head.agentId), ...head, head: `${head.seq}:${head.hash}` }));
    heads.sort((a, b) => a.agent.localeCompare(b.agent));
    if (values.json === true) io.out(JSON.stringify(heads));
    else if (heads.length === 0) io.out(context.agentId === undefined ? 'No memory events yet.' : `${values.agent}: no memory events yet.`);
    else {
      const width = Math.max(...heads.map((head) => head.agent.length));
      for (const head of heads) io.out(`${head.agent.padEnd(width)}  ${head.head}`);
    }
    return exitCode.ok;
  } finally {
    await context.database.close();
  }
}

/** Recompute the memory event chains with the installation key and name the first broken link of each. */
export async function runAuditVerify(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseCommand(args, { agent: { type: 'string' }, expect: { type: 'string' }, json: { type: 'boolean' } });
  let expected: { seq: number; hash: string } | undefined;
  if (typeof values.expect === 'string') {
    const match = headPattern.exec(values.expect.trim());
    if (match === null) throw new UsageError(`--expect takes a head as roster audit head prints it, SEQ:HASH (a number, a colon, 64 hex digits).`);
    if (typeof values.agent !== 'string') throw new UsageError('--expect needs --agent: a head belongs to one agent’s chain.');
    expected = { seq: Number(match[1]), hash: match[2]! };
  }
  const context = await openAudit(io, values.agent);
  try {
    const expect: ChainHead[] = expected === undefined ? [] : [{ agentId: context.agentId!, ...expected }];
    const reports = (await context.audit.verify({ ...(context.agentId === undefined ? {} : { agentId: context.agentId }), expect })).map((report) => ({
      agent: nameOf(context, report.agentId),
      ...report,
    }));
    reports.sort((a, b) => a.agent.localeCompare(b.agent));
    const ok = reports.every((report) => report.ok);
    if (values.json === true) {
      io.out(JSON.stringify({ ok, chains: reports }));
    } else if (reports.length === 0) {
      io.out(context.agentId === undefined ? 'No memory events yet.' : `${values.agent}: no memory events yet.`);
    } else {
      const width = Math.max(...reports.map((report) => report.agent.length));
      for (const report of reports) {
        const unkeyed = report.unkeyed > 0 ? ` (the first ${report.unkeyed} from before keying)` : '';
        const expectedHere = expected !== undefined && report.ok ? `, at or after ${expected.seq}:${expected.hash.slice(0, 12)}…` : '';
        io.out(
          report.broken === null
            ? `${report.agent.padEnd(width)}  ok      ${report.events} events${unkeyed}${expectedHere}`
            : `${report.agent.padEnd(width)}  BROKEN  at event ${report.broken.seq}${report.broken.id === null ? '' : ` (${report.broken.id})`}: ${report.broken.problem}`,
        );
      }
    }
    return ok ? exitCode.ok : exitCode.failure;
  } finally {
    await context.database.close();
  }
}
