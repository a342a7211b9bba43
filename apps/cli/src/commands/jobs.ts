import { connectionFromUrl, isJobName, jobNames, runJobNow } from '@roster/jobs';
import { approveLesson, canJudge, listApprovals, listLessons, mirrorReport, rejectApproval, retireLesson } from '@roster/learning';
import { locateRedis } from '@roster/redis';
import { RosterError, UsageError } from '@roster/errors';
import type { CommandIo } from '../io.js';
import { exitCode } from '../io.js';
import { parseCommand, parseInteger } from '../parse.js';
import { openRoster } from './roster-runtime.js';

/** Enqueue a job now; with --wait, print its result when a worker has run it. */
export async function runJobsRun(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseCommand(
    args,
    { agent: { type: 'string' }, wait: { type: 'boolean' }, json: { type: 'boolean' }, all: { type: 'boolean' }, timeout: { type: 'string' } },
    true,
  );
  const name = positionals[0];
  if (positionals.length !== 1 || name === undefined || !isJobName(name)) throw new UsageError(`Name one job: ${jobNames.join(', ')}.`);
  if ((name === 'erase' || name === 'vacuum' || name === 'backup') && typeof values.agent === 'string') throw new UsageError(`${name} works on the whole database: it takes no --agent.`);
  const timeoutSeconds = parseInteger(values.timeout as string | undefined, '--timeout', 1, 86_400) ?? 600;
  const { database, roster, config } = await openRoster(io);
  try {
    const payload: Record<string, unknown> = {};
    if (typeof values.agent === 'string') payload.agentId = (await roster.core.directory.agentByName(values.agent)).id;
    if (values.all === true) {
      if (name !== 'embed') throw new UsageError('--all goes with embed (re-embed every fact after a model change).');
      payload.all = true;
    }
    const redisUrl = await locateRedis(config.REDIS_URL, config.ROSTER_DATA_DIR);
    if (values.wait === true) io.err(`Waiting for a worker to run ${name} (roster start or roster worker must be running)…`);
    const outcome = await runJobNow(connectionFromUrl(redisUrl), name, payload, { prefix: config.ROSTER_QUEUE_PREFIX, wait: values.wait === true, timeoutMs: timeoutSeconds * 1000 }).catch((error: unknown) => {
      if (values.wait === true && !RosterError.isInstance(error) && /timed out/i.test((error as Error).message)) {
        throw new RosterError(
          'job_wait_timeout',
          `No worker finished ${name} within ${timeoutSeconds} s; the job stays queued. Start roster start or roster worker, or wait longer with --timeout.`,
          { cause: error },
        );
      }
      throw error;
    });
    if (values.json === true) io.out(JSON.stringify({ job: name, id: outcome.id, ...(values.wait === true ? { result: outcome.result } : {}) }));
    else io.out(values.wait === true ? `${name} done: ${JSON.stringify(outcome.result)}` : `${name} queued as job ${outcome.id}.`);
    return exitCode.ok;
  } finally {
    await database.close();
  }
}

export async function runMirrorReport(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseCommand(args, { agent: { type: 'string' }, json: { type: 'boolean' } });
  if (typeof values.agent !== 'string') throw new UsageError('--agent is required.');
  const { database, roster } = await openRoster(io);
  try {
    const agent = await roster.core.directory.agentByName(values.agent);
    const report = await mirrorReport(database, agent.id, { judged: canJudge(roster.judgeFor(agent)) });
    if (values.json === true) io.out(JSON.stringify({ agent: agent.name, ...report }));
    else {
      io.out(`${agent.name}: ${report.summary}`);
      for (const item of report.cases) {
        const marks = item.history.map((run) => (run.verdict === 'pass' ? '✓' : run.verdict === 'fail' ? '✗' : '?')).join('');
        io.out(`  ${item.status === 'graduated' ? 'graduated' : `streak ${item.streak}`}  ${marks.padEnd(10)}  ${item.text === '' ? '[forgotten]' : item.text}`);
      }
    }
    return exitCode.ok;
  } finally {
    await database.close();
  }
}

/** roster approvals [list] | approve ID --as PERSON | reject ID --as PERSON */
export async function runApprovals(args: string[], io: CommandIo): Promise<number> {
  const [action = 'list', ...rest] = args[0]?.startsWith('-') === true ? ['list', ...args] : args;
  const { values, positionals } = parseCommand(rest, { agent: { type: 'string' }, as: { type: 'string' }, json: { type: 'boolean' }, all: { type: 'boolean' } }, true);
  const { database, roster } = await openRoster(io);
  try {
    if (action === 'list') {
      const agentId = typeof values.agent === 'string' ? (await roster.core.directory.agentByName(values.agent)).id : undefined;
      const approvals = await listApprovals(database, { ...(agentId === undefined ? {} : { agentId }), ...(values.all === true ? {} : { status: 'pending' as const }) });
      const agents = await roster.core.directory.listAgents({ includeArchived: true });
      const named = approvals.map((approval) => ({ ...approval, agent: agents.find((agent) => agent.id === approval.agentId)?.name ?? approval.agentId }));
      if (values.json === true) io.out(JSON.stringify(named));
      else if (named.length === 0) io.out('Nothing waits for approval.');
      else {
        for (const item of named) {
          const evidence = item.evidence as Array<{ personId?: string | null; paraphrased?: boolean }>;
          const people = new Set(evidence.map((entry) => entry.personId ?? null)).size;
          const from = evidence.some((entry) => entry.paraphrased === true) ? `, the judge's paraphrase of ${people} people's words` : '';
          io.out(`${item.id}  ${item.agent}  ${item.status}  (${item.evidence.length} evidence${from}, by ${item.proposedByKind} ${item.proposedBy ?? ''})\n  ${item.text}`);
        }
      }
      return exitCode.ok;
    }
    if (action !== 'approve' && action !== 'reject') throw new UsageError('roster approvals [list] | approve ID --as PERSON | reject ID --as PERSON');
    if (positionals.length !== 1 || typeof values.as !== 'string') throw new UsageError(`roster approvals ${action} ID --as PERSON: a person decides, by name.`);
    const person = await roster.core.directory.personByName(values.as);
    if (action === 'approve') {
      const lesson = await approveLesson(database, roster.memory.audit, positionals[0]!, { kind: 'person', personId: person.id });
      io.out(`Approved by ${person.name}: lesson ${lesson.id} (version ${lesson.version}) now rides in every prompt of its agent.`);
    } else {
      await rejectApproval(database, positionals[0]!, { kind: 'person', personId: person.id });
      io.out(`Rejected by ${person.name}.`);
    }
    return exitCode.ok;
  } finally {
    await database.close();
  }
}

/** roster lessons list --agent N | retire ID --as PERSON --reason "…" */
export async function runLessons(args: string[], io: CommandIo): Promise<number> {
  const [action = 'list', ...rest] = args[0]?.startsWith('-') === true ? ['list', ...args] : args;
  const { values, positionals } = parseCommand(rest, { agent: { type: 'string' }, as: { type: 'string' }, reason: { type: 'string' }, json: { type: 'boolean' } }, true);
  const { database, roster } = await openRoster(io);
  try {
    if (action === 'list') {
      if (typeof values.agent !== 'string') throw new UsageError('--agent is required.');
      const agent = await roster.core.directory.agentByName(values.agent);
      const lessons = await listLessons(database, agent.id);
      if (values.json === true) io.out(JSON.stringify(lessons));
      else if (lessons.length === 0) io.out(`${agent.name} has no lessons.`);
      else for (const lesson of lessons) io.out(`${lesson.id}  ${lesson.status}  v${lesson.version}  ${lesson.text}`);
      return exitCode.ok;
    }
    if (action !== 'retire') throw new UsageError('roster lessons list --agent N | retire ID --as PERSON --reason "…"');
    if (positionals.length !== 1 || typeof values.as !== 'string' || typeof values.reason !== 'string') throw new UsageError('roster lessons retire ID --as PERSON --reason "…"');
    const person = await roster.core.directory.personByName(values.as);
    await retireLesson(database, roster.memory.audit, positionals[0]!, values.reason, { kind: 'person', personId: person.id });
    io.out(`Retired by ${person.name}; the same text will not be promoted again.`);
    return exitCode.ok;
  } finally {
    await database.close();
  }
}
