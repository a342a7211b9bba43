import { describeEnvironment } from '@roster/config';
import { ConfigError, RosterError, UsageError } from '@roster/errors';
import { runAgentAdd, runAgentArchive, runAgentList, runAgentPurge, runPersonAdd, runPersonLinkCode } from './commands/agents.js';
import { runAuditVerify } from './commands/audit.js';
import { runChat } from './commands/chat.js';
import { runApprovals, runJobsRun, runLessons, runMirrorReport } from './commands/jobs.js';
import { runMemoryForget, runMemoryHistory, runMemoryList } from './commands/memory.js';
import { runDbServe } from './commands/db-serve.js';
import { runDoctor } from './commands/doctor.js';
import { runMigrate } from './commands/migrate.js';
import { runServices } from './commands/services.js';
import { exitCode, type CommandIo } from './io.js';

interface Command {
  /** The words that name it: `['db', 'serve']`. */
  path: string[];
  usage: string;
  summary: string;
  /** More lines for `--help`: options and notes. */
  details: string[];
  run(args: string[], io: CommandIo): Promise<number>;
}

const commands: Command[] = [
  {
    path: ['start'],
    usage: 'roster start',
    summary: 'Run the server, the worker and the gateway in one process.',
    details: [
      'Migrates first. Uses the embedded database unless DATABASE_URL is set, and REDIS_URL,',
      'or a private redis-server in the data folder when that is not reachable.',
    ],
    run: (args, io) => runServices(args, io, ['server', 'worker', 'gateway'], true),
  },
  {
    path: ['server'],
    usage: 'roster server',
    summary: 'Run the HTTP server alone (API, web page, health).',
    details: ['For production, beside `roster worker` and `roster gateway`; needs a reachable REDIS_URL.'],
    run: (args, io) => runServices(args, io, ['server'], false),
  },
  {
    path: ['worker'],
    usage: 'roster worker',
    summary: 'Run the job worker alone.',
    details: ['May run more than once; needs a reachable REDIS_URL.'],
    run: (args, io) => runServices(args, io, ['worker'], false),
  },
  {
    path: ['gateway'],
    usage: 'roster gateway',
    summary: 'Run the channel gateway alone.',
    details: ['Serves the channels whose tokens are configured; needs a reachable REDIS_URL.'],
    run: (args, io) => runServices(args, io, ['gateway'], false),
  },
  {
    path: ['migrate'],
    usage: 'roster migrate [--json]',
    summary: 'Bring the database to the latest migration.',
    details: ['Idempotent: a second run reports nothing to do. Safe to run from several processes at once.'],
    run: runMigrate,
  },
  {
    path: ['db', 'serve'],
    usage: 'roster db serve [--port N]',
    summary: 'Expose the embedded database over the Postgres wire protocol.',
    details: [
      '--port N   the loopback port to listen on (default 5433)',
      'Prints a connection string for psql, another Roster process (as DATABASE_URL), or an operator.',
      'One connection at a time: the embedded database is a single session.',
    ],
    run: runDbServe,
  },
  {
    path: ['agent', 'add'],
    usage: 'roster agent add --name N --job "…" [--engine E] [--instructions "…"]',
    summary: 'Add an agent: a name, a job sentence, an engine (ROSTER_ENGINE by default).',
    details: ['Engines: offline, openai:<model>, anthropic:<model>, openai-compatible:<base-url>#<model>.'],
    run: runAgentAdd,
  },
  {
    path: ['agent', 'list'],
    usage: 'roster agent list [--json] [--all]',
    summary: 'List the agents (--all includes archived ones).',
    details: [],
    run: runAgentList,
  },
  {
    path: ['agent', 'archive'],
    usage: 'roster agent archive NAME',
    summary: 'Archive an agent; its memory is kept.',
    details: [],
    run: runAgentArchive,
  },
  {
    path: ['agent', 'purge'],
    usage: 'roster agent purge NAME --confirm NAME',
    summary: "Forget all of an archived agent's memory, for good (audited, tombstones kept).",
    details: ['--confirm takes the agent’s exact name again.'],
    run: runAgentPurge,
  },
  {
    path: ['person', 'add'],
    usage: 'roster person add NAME [--role owner|member|guest]',
    summary: 'Add a person agents can remember things about.',
    details: [],
    run: runPersonAdd,
  },
  {
    path: ['person', 'link-code'],
    usage: 'roster person link-code NAME',
    summary: 'A single-use code (one hour) that ties a channel handle to the person.',
    details: ['The person sends /link CODE from Telegram, Discord, Slack or WhatsApp.'],
    run: runPersonLinkCode,
  },
  {
    path: ['chat'],
    usage: 'roster chat --agent N [--as PERSON] [--team] [--json] ["message"]',
    summary: 'One turn with an agent (or every agent with --team); without a message, an interactive session.',
    details: ['--as PERSON   talk as this person (default: the owner)', '--json        print { "replies": [{ "agent", "text", "toolCalls" }] }'],
    run: (args, io) => runChat(args, io),
  },
  {
    path: ['memory', 'list'],
    usage: 'roster memory list --agent N [--person P] [--valid-at TIME] [--json]',
    summary: "What an agent remembers about a person (or, without --person, its agent-wide knowledge).",
    details: [],
    run: runMemoryList,
  },
  {
    path: ['memory', 'forget'],
    usage: 'roster memory forget --agent N --fact ID',
    summary: 'Forget a fact for good: its words are erased everywhere; a tombstone keeps it from coming back.',
    details: [],
    run: runMemoryForget,
  },
  {
    path: ['memory', 'history'],
    usage: 'roster memory history --agent N --fact ID [--json]',
    summary: 'The versions of a fact: what it replaced and what replaced it.',
    details: [],
    run: runMemoryHistory,
  },
  {
    path: ['jobs', 'run'],
    usage: 'roster jobs run <fade|harvest|mirror|review|extract|embed|episodes> [--agent NAME] [--all] [--wait] [--json]',
    summary: 'Enqueue a job now; with --wait, print its result when a worker has run it.',
    details: ['--all      with embed: re-embed every fact (after a model change)', '--timeout  seconds to wait (default 600)'],
    run: runJobsRun,
  },
  {
    path: ['mirror', 'report'],
    usage: 'roster mirror report --agent N [--json]',
    summary: '"N of M corrections no longer repeated", with each case’s streak and history.',
    details: [],
    run: runMirrorReport,
  },
  {
    path: ['approvals'],
    usage: 'roster approvals [list [--agent N] [--all]] | approve ID --as PERSON | reject ID --as PERSON',
    summary: 'Lessons waiting for a person: see their whole text, approve or reject them.',
    details: ['Only a person decides; no job or schedule can.'],
    run: runApprovals,
  },
  {
    path: ['lessons'],
    usage: 'roster lessons [list] --agent N | retire ID --as PERSON --reason "…"',
    summary: 'An agent’s lessons; retire one (its text cannot come back).',
    details: [],
    run: runLessons,
  },
  {
    path: ['audit', 'verify'],
    usage: 'roster audit verify [--agent NAME] [--json]',
    summary: 'Recompute the memory audit chains and name the first broken link.',
    details: ['--agent NAME   check one agent only', 'Exits 1 when a chain is broken.'],
    run: runAuditVerify,
  },
  {
    path: ['doctor'],
    usage: 'roster doctor [--json]',
    summary: 'Check the database, pgvector, migrations, Redis, engines and channels.',
    details: ['One line each: ok, fail (with what to do), or off (not configured). Exits 1 when anything fails.'],
    run: runDoctor,
  },
];

function overview(): string {
  const width = Math.max(...commands.map((command) => command.usage.length));
  return [
    'Roster: a wallet of agents with truthful memory.',
    '',
    'Usage: roster <command> [options]',
    '',
    'Commands:',
    ...commands.map((command) => `  ${command.usage.padEnd(width)}  ${command.summary}`),
    '',
    'Every command takes --help. Configuration comes from the environment:',
    ...describeEnvironment().map((row) => `  ${row.variable}`),
    '',
    'Exit codes: 0 success, 1 failure, 2 usage error.',
  ].join('\n');
}

function commandHelp(command: Command): string {
  return [`Usage: ${command.usage}`, '', command.summary, ...(command.details.length > 0 ? ['', ...command.details] : [])].join('\n');
}

/** Run the CLI on `argv` (without node and the script) and return the exit code. */
export async function runCli(argv: string[], io: CommandIo): Promise<number> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    io.out(overview());
    return argv.length === 0 ? exitCode.usage : exitCode.ok;
  }
  const command = commands
    .filter((candidate) => candidate.path.every((word, index) => argv[index] === word))
    .sort((a, b) => b.path.length - a.path.length)[0];
  if (command === undefined) {
    const group = commands.filter((candidate) => candidate.path.length > 1 && candidate.path[0] === argv[0]);
    if (group.length > 0) {
      io.err(`roster ${argv[0]}: choose one of: ${group.map((candidate) => candidate.path.join(' ')).join(', ')}.`);
    } else {
      io.err(`roster: unknown command ${JSON.stringify(argv[0])}. Run roster --help for the list.`);
    }
    return exitCode.usage;
  }
  const args = argv.slice(command.path.length);
  if (args.includes('--help') || args.includes('-h')) {
    io.out(commandHelp(command));
    return exitCode.ok;
  }
  try {
    return await command.run(args, io);
  } catch (error) {
    if (UsageError.isInstance(error) && error.code === 'usage') {
      io.err(`roster ${command.path.join(' ')}: ${error.message}\n${commandHelp(command)}`);
      return exitCode.usage;
    }
    if (error instanceof ConfigError || (RosterError.isInstance(error) && error.code === 'config_invalid')) {
      io.err(error.message);
      return exitCode.failure;
    }
    if (RosterError.isInstance(error)) {
      io.err(`roster ${command.path.join(' ')}: ${error.message}`);
      return exitCode.failure;
    }
    io.err(`roster ${command.path.join(' ')} failed: ${(error as Error).stack ?? String(error)}`);
    return exitCode.failure;
  }
}
