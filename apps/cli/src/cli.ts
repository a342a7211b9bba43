import { channelPlugins } from '@roster/channel-registry';
import { ConfigError, RosterError, UsageError } from '@roster/errors';
import { describeFailure, stackOf, wantsStacks } from './failure.js';
import { commandHelp, groupHelp, overview, type Command } from './help.js';
import { exitCode, type CommandIo } from './io.js';
import { version } from './version.js';

// Each command's module is imported when it runs: `--help` and the light commands skip the heavy ones (channels, engines, queues).

/** The registered channels, as a usage line writes the choice. */
const channelNames = channelPlugins.map((plugin) => plugin.name).join('|');

/** Each registered channel's own options of `roster channel add`, from its plugin. */
function channelOptions(): string[] {
  return channelPlugins.map((plugin) => {
    const options = [
      ...Object.values(plugin.credentials).map((field) => `--${field.option} …  ${field.label} (or ${field.variable})`),
      ...(plugin.boundRooms === undefined ? [] : [`--${plugin.boundRooms.option} ID  ${plugin.boundRooms.label} where every message is for the bot, without a mention; a comma list or repeated; none clears them${plugin.boundRooms.variable === undefined ? '' : ` (or ${plugin.boundRooms.variable})`}`]),
      ...(plugin.link === undefined ? [] : [`links first (${plugin.link.instructions.replace(/[.:]\s*$/, '')}); --${plugin.link.skipOption} only binds`]),
    ];
    return `${plugin.name}: ${options.length === 0 ? 'nothing to store' : options.join('; ')}`;
  });
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
    run: async (args, io) => (await import('./commands/services.js')).runServices(args, io, ['server', 'worker', 'gateway'], true),
  },
  {
    path: ['server'],
    usage: 'roster server',
    summary: 'Run the HTTP server alone (API, web page, health).',
    details: ['For production, beside `roster worker` and `roster gateway`; needs a reachable REDIS_URL.'],
    run: async (args, io) => (await import('./commands/services.js')).runServices(args, io, ['server'], false),
  },
  {
    path: ['worker'],
    usage: 'roster worker',
    summary: 'Run the job worker alone.',
    details: ['May run more than once; needs a reachable REDIS_URL.'],
    run: async (args, io) => (await import('./commands/services.js')).runServices(args, io, ['worker'], false),
  },
  {
    path: ['gateway'],
    usage: 'roster gateway',
    summary: 'Run the channel gateway alone.',
    details: ['Serves the channels whose tokens are configured; needs a reachable REDIS_URL.'],
    run: async (args, io) => (await import('./commands/services.js')).runServices(args, io, ['gateway'], false),
  },
  {
    path: ['migrate'],
    usage: 'roster migrate [--json]',
    summary: 'Bring the database to the latest migration.',
    details: ['Idempotent: a second run reports nothing to do. Safe to run from several processes at once.'],
    run: async (args, io) => (await import('./commands/migrate.js')).runMigrate(args, io),
  },
  {
    path: ['db', 'serve'],
    usage: 'roster db serve [--port N] [--idle-in-transaction-timeout SECONDS]',
    summary: 'Expose the embedded database over the Postgres wire protocol.',
    details: [
      '--port N   the loopback port to listen on (default 5433)',
      '--idle-in-transaction-timeout SECONDS   a client idle inside a transaction this long is rolled back and closed (default 30; 0 never)',
      'Prints a connection string for psql, another Roster process (as DATABASE_URL), or an operator.',
      'One connection at a time: the embedded database is a single session.',
      'Other roster commands on the same data folder keep working while it serves.',
    ],
    run: async (args, io) => (await import('./commands/db-serve.js')).runDbServe(args, io),
  },
  {
    path: ['login-link'],
    usage: 'roster login-link [--as PERSON]',
    summary: 'Print a link that signs a person in to the web page once (15 minutes).',
    details: [
      '--as PERSON   whom it signs in. Without it: the first owner (made on a fresh install).',
      'The token is after the #, so it reaches no server log. Anyone with the link is that person.',
    ],
    run: async (args, io) => (await import('./commands/login-link.js')).runLoginLink(args, io),
  },
  {
    path: ['agent', 'add'],
    usage: 'roster agent add --name N --job "…" [--engine E] [--instructions "…"]',
    summary: 'Add an agent: a name, a job sentence, an engine (ROSTER_ENGINE by default).',
    details: ['Engines: offline, openai:<model>, anthropic:<model>, openai-compatible:<base-url>#<model>.'],
    run: async (args, io) => (await import('./commands/agents.js')).runAgentAdd(args, io),
  },
  {
    path: ['agent', 'list'],
    usage: 'roster agent list [--json] [--all]',
    summary: 'List the agents (--all includes archived ones).',
    details: [],
    run: async (args, io) => (await import('./commands/agents.js')).runAgentList(args, io),
  },
  {
    path: ['agent', 'archive'],
    usage: 'roster agent archive NAME',
    summary: 'Archive an agent; its memory is kept.',
    details: ['roster agent restore NAME makes it active again; roster agent purge NAME forgets its memory.'],
    run: async (args, io) => (await import('./commands/agents.js')).runAgentArchive(args, io),
  },
  {
    path: ['agent', 'restore'],
    usage: 'roster agent restore NAME',
    summary: 'Make an archived agent active again, with the memory it kept.',
    details: [],
    run: async (args, io) => (await import('./commands/agents.js')).runAgentRestore(args, io),
  },
  {
    path: ['agent', 'rename'],
    usage: 'roster agent rename OLD NEW',
    summary: 'Give an agent a new name; its memory, lessons and conversations stay with it.',
    details: ['Names are unique whatever their case: a name another agent has is refused.'],
    run: async (args, io) => (await import('./commands/agents.js')).runAgentRename(args, io),
  },
  {
    path: ['agent', 'purge'],
    usage: 'roster agent purge NAME --confirm NAME',
    summary: "Forget all of an archived agent's memory, for good (audited, tombstones kept).",
    details: ['--confirm takes the agent’s exact name again.'],
    run: async (args, io) => (await import('./commands/agents.js')).runAgentPurge(args, io),
  },
  {
    path: ['person', 'add'],
    usage: 'roster person add NAME [--role owner|member|guest]',
    summary: 'Add a person agents can remember things about.',
    details: [],
    run: async (args, io) => (await import('./commands/agents.js')).runPersonAdd(args, io),
  },
  {
    path: ['person', 'list'],
    usage: 'roster person list [--json]',
    summary: 'List the people, with their roles; the first owner is who roster chat speaks as by default.',
    details: [],
    run: async (args, io) => (await import('./commands/agents.js')).runPersonList(args, io),
  },
  {
    path: ['person', 'link-code'],
    usage: 'roster person link-code NAME',
    summary: 'A single-use code (one hour) that ties a channel handle to the person.',
    details: ['The person sends /link CODE on Telegram or WhatsApp, /roster link CODE on Slack.'],
    run: async (args, io) => (await import('./commands/agents.js')).runPersonLinkCode(args, io),
  },
  {
    path: ['person', 'export'],
    usage: 'roster person export NAME [--out FILE]',
    summary: 'Everything Roster holds about one person, as JSON: facts with every version, messages, identities, learning, sessions.',
    details: [
      '--out FILE   write it to FILE, readable by you alone (mode 600); without it, to standard output',
      'Read in the person’s own scopes: nothing about anyone else is in it. Tokens and their hashes never are.',
    ],
    run: async (args, io) => (await import('./commands/person-export.js')).runPersonExport(args, io),
  },
  {
    path: ['person', 'forget'],
    usage: 'roster person forget NAME [--yes | --confirm NAME]',
    summary: 'Erase everything Roster holds about one person, with every agent and on every channel, for good.',
    details: [
      'Facts are forgotten (keyed tombstones); messages and replies to them, handles, learning, lessons',
      'drawn from their words, link codes, sessions and tokens go; the erase job takes them off the disk.',
      'Asks for their name in a terminal; --confirm NAME or --yes otherwise. The last owner is refused.',
    ],
    run: async (args, io) => (await import('./commands/person-erase.js')).runPersonErase(args, io),
  },
  {
    path: ['channel', 'add'],
    usage: `roster channel add ${channelNames} [its options] [--agent NAME] [--policy pairing|allowlist|open] [--allow HANDLE]… [--account A]`,
    summary: 'Store a channel’s token (or link a device, where its platform needs one) and bind it to an agent (or the whole wallet) with who may talk to it.',
    details: [
      ...channelOptions(),
      'A value of - is read from standard input (kept out of shell history).',
      'Tokens are stored sealed with the installation key and never shown again; an environment variable, when set, wins.',
      '--agent NAME   the agent it talks to (default: the whole wallet; people pick with /agent)',
      '--policy P     pairing (default: linked people only), allowlist (and --allow handles), open (strangers as guests)',
      '--allow HANDLE a platform handle let in under allowlist; repeat for more',
      '--account A    a second bot on the same channel (default: default)',
      'roster doctor checks each token against its platform.',
    ],
    run: async (args, io) => (await import('./commands/channels.js')).runChannelAdd(args, io),
  },
  {
    path: ['channel', 'list'],
    usage: 'roster channel list [--json]',
    summary: 'The channels: configured or not, and their bindings.',
    details: [],
    run: async (args, io) => (await import('./commands/channels.js')).runChannelList(args, io),
  },
  {
    path: ['channel', 'remove'],
    usage: `roster channel remove ${channelNames} [--account A]`,
    summary: 'Remove a channel’s binding and its stored token: a running gateway stops serving it (a token in the environment stays in force).',
    details: [],
    run: async (args, io) => (await import('./commands/channels.js')).runChannelRemove(args, io),
  },
  {
    path: ['chat'],
    usage: 'roster chat (--agent N | --team) [--as PERSON] [--json] ["message"]',
    summary: 'One turn with an agent (or every agent with --team); without a message, an interactive session.',
    details: [
      '--agent NAME  talk to this agent',
      '--team        talk to every active agent at once (not with --agent)',
      '--as PERSON   talk as this person. Without it: the first owner created, always the same one;',
      '              on a fresh install an owner named "owner" is made on first use.',
      '--json        print { "replies": [{ "agent", "text", "toolCalls" }] }',
      'A message is at most 4,000 characters.',
    ],
    run: async (args, io) => (await import('./commands/chat.js')).runChat(args, io),
  },
  {
    path: ['memory', 'list'],
    usage: 'roster memory list --agent N [--person P] [--valid-at TIME] [--recorded-at TIME] [--json]',
    summary: 'What an agent remembers: about one person, or without --person about everyone, by person.',
    details: [
      '--person P         only what it remembers about P (and what it knows agent-wide)',
      '--valid-at TIME    what was true at that time, as recorded now (like 2026-11-30T08:00:00Z)',
      '--recorded-at TIME what it believed at that time: true then, or true at --valid-at',
      '--json             with --person: a list of facts;',
      '                   without: { agent, agentWide, people: [{ person, facts }] }',
    ],
    run: async (args, io) => (await import('./commands/memory.js')).runMemoryList(args, io),
  },
  {
    path: ['memory', 'forget'],
    usage: 'roster memory forget --agent N --fact ID',
    summary: 'Forget a fact for good: its words are erased everywhere; a tombstone keeps it from coming back.',
    details: [],
    run: async (args, io) => (await import('./commands/memory.js')).runMemoryForget(args, io),
  },
  {
    path: ['memory', 'correct'],
    usage: 'roster memory correct --agent N --fact ID --content TEXT [--json]',
    summary: '“That was wrong”: the fact is retracted and TEXT takes its place; the correction becomes a mirror case, as one said in chat.',
    details: ['--json             { retracted: { id, content }, fact: { id, content } }'],
    run: async (args, io) => (await import('./commands/memory.js')).runMemoryCorrect(args, io),
  },
  {
    path: ['memory', 'history'],
    usage: 'roster memory history --agent N --fact ID [--json]',
    summary: 'The versions of a fact: what it replaced and what replaced it.',
    details: [],
    run: async (args, io) => (await import('./commands/memory.js')).runMemoryHistory(args, io),
  },
  {
    path: ['jobs', 'run'],
    usage: 'roster jobs run <fade|harvest|mirror|review|extract|embed|episodes|erase|vacuum|backup> [options]',
    summary: 'Enqueue a job now; with --wait, print its result when a worker has run it.',
    details: [
      '--all      with embed: re-embed every fact (after a model change)',
      '--agent NAME, --json; --wait: print the result, waiting --timeout seconds (default 600)',
      'erase      take forgotten words off the disk, in every table that holds people\'s words',
      'vacuum     reclaim dead rows on the embedded database (a server Postgres vacuums itself)',
    ],
    run: async (args, io) => (await import('./commands/jobs.js')).runJobsRun(args, io),
  },
  {
    path: ['mirror', 'report'],
    usage: 'roster mirror report --agent N [--json]',
    summary: '"N of M corrections no longer repeated", with each case’s streak and history.',
    details: [],
    run: async (args, io) => (await import('./commands/jobs.js')).runMirrorReport(args, io),
  },
  {
    path: ['approvals'],
    usage: 'roster approvals [list [--agent N] [--all]] | approve ID --as PERSON | reject ID --as PERSON',
    summary: 'Lessons waiting for a person: see their whole text, approve or reject them.',
    details: ['Only a person decides; no job or schedule can.'],
    run: async (args, io) => (await import('./commands/jobs.js')).runApprovals(args, io),
  },
  {
    path: ['lessons'],
    usage: 'roster lessons [list] --agent N | retire ID --as PERSON --reason "…"',
    summary: 'An agent’s lessons; retire one (its text cannot come back).',
    details: [],
    run: async (args, io) => (await import('./commands/jobs.js')).runLessons(args, io),
  },
  {
    path: ['audit', 'head'],
    usage: 'roster audit head [--agent NAME] [--json]',
    summary: 'Print where each memory audit chain ends (SEQ:HASH), to keep somewhere else.',
    details: [
      '--agent NAME   one agent only',
      'A head is the last event of a chain and its hash, keyed with the installation key.',
      'Keep heads off this machine: roster audit verify --expect shows a chain cut short since.',
    ],
    run: async (args, io) => (await import('./commands/audit.js')).runAuditHead(args, io),
  },
  {
    path: ['audit', 'verify'],
    usage: 'roster audit verify [--agent NAME] [--expect SEQ:HASH] [--json]',
    summary: 'Recompute the memory audit chains with the installation key; name the first broken link.',
    details: [
      '--agent NAME        check one agent only',
      '--expect SEQ:HASH   a head from roster audit head (needs --agent): the chain must still hold it',
      'Without --expect, a chain whose last events were removed still verifies: it is whole.',
      'Exits 1 when a chain is broken or does not reach the expected head.',
    ],
    run: async (args, io) => (await import('./commands/audit.js')).runAuditVerify(args, io),
  },
  {
    path: ['backup'],
    usage: 'roster backup --out FILE [--plain] [--json]',
    summary: 'A consistent copy of the database while Roster runs, sealed with the installation key (mode 600).',
    details: [
      'Embedded: the database’s own image of its folder; a server: pg_dump of Roster’s schema (pg_dump on PATH).',
      'Carries the schema version, the audit chains’ heads, the time taken and the key’s fingerprint.',
      '--plain   not sealed: anyone who can read the file reads every word in it',
    ],
    run: async (args, io) => (await import('./commands/backup.js')).runBackup(args, io),
  },
  {
    path: ['restore'],
    usage: 'roster restore FILE [--replay-forgets-from DATA_DIR|BACKUP|postgres://…] [--json]',
    summary: 'Restore a backup into an empty data folder or an empty database; print the audit heads.',
    details: [
      'Refuses a non-empty target, a newer schema, another key or a changed file, and changes nothing then.',
      '--replay-forgets-from   forget again what the newer database (or a newer backup) forgot after this backup',
    ],
    run: async (args, io) => (await import('./commands/backup.js')).runRestore(args, io),
  },
  {
    path: ['doctor'],
    usage: 'roster doctor [--deep] [--json]',
    summary: 'Check the database, pgvector, migrations, Redis, engines and channels.',
    details: [
      'One line each: ok, fail (with what to do), or off (not configured). Exits 1 when anything fails.',
      '--deep  also read every row of every table, to find a damaged page before a turn does',
    ],
    run: async (args, io) => (await import('./commands/doctor.js')).runDoctor(args, io),
  },
];

/** The group a first word names (`agent`, `memory`, …): its commands, or none. */
function groupOf(word: string | undefined): Command[] {
  return commands.filter((candidate) => candidate.path.length > 1 && candidate.path[0] === word);
}

const isHelp = (word: string | undefined): boolean => word === '--help' || word === '-h';

/** Run the CLI on `argv` (without node and the script) and return the exit code. */
export async function runCli(argv: string[], io: CommandIo): Promise<number> {
  if (argv.length === 0) {
    io.out(overview(commands, version));
    return exitCode.usage;
  }
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v' || argv[0] === 'version')) {
    io.out(version);
    return exitCode.ok;
  }
  // `roster help agent add` is `roster agent add --help`.
  if (argv[0] === 'help') return argv.length === 1 ? runCli(['--help'], io) : runCli([...argv.slice(1), '--help'], io);
  if (isHelp(argv[0])) {
    io.out(overview(commands, version));
    return exitCode.ok;
  }
  const command = commands
    .filter((candidate) => candidate.path.every((word, index) => argv[index] === word))
    .sort((a, b) => b.path.length - a.path.length)[0];
  if (command === undefined) {
    const group = groupOf(argv[0]);
    if (group.length > 0 && argv.length === 2 && isHelp(argv[1])) {
      io.out(groupHelp(argv[0]!, group));
      return exitCode.ok;
    }
    if (group.length > 0) {
      io.err(`roster ${argv[0]}: choose one of: ${group.map((candidate) => candidate.path.join(' ')).join(', ')}. roster ${argv[0]} --help says more.`);
    } else {
      io.err(`roster: unknown command ${JSON.stringify(argv[0])}. Run roster --help for the list.`);
    }
    return exitCode.usage;
  }
  const name = `roster ${command.path.join(' ')}`;
  const args = argv.slice(command.path.length);
  if (args.some(isHelp)) {
    io.out(commandHelp(command));
    return exitCode.ok;
  }
  try {
    return await command.run(args, io);
  } catch (error) {
    if (UsageError.isInstance(error) && error.code === 'usage') {
      // Two full sentences: the problem (Node's parser says it without a full stop), then where the usage is.
      const problem = error.message.trim();
      io.err(`${name}: ${/[.!?:]$/.test(problem) ? problem : `${problem}.`} \`${name} --help\` shows the usage.`);
      return exitCode.usage;
    }
    if (error instanceof ConfigError || (RosterError.isInstance(error) && error.code === 'config_invalid')) {
      io.err(error.message);
      return exitCode.failure;
    }
    io.err(`${name}: ${RosterError.isInstance(error) ? error.message : describeFailure(error)}`);
    if (wantsStacks(io.env)) io.err(stackOf(error));
    return exitCode.failure;
  }
}
