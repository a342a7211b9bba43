import type { Database, Scope } from '@roster/db';
import type { Fact, Memory } from '@roster/memory';
import type { Agent, Directory, Person } from './directory.js';

/** The version of the person export's layout; raised when a field changes meaning or goes. */
export const personExportFormatVersion = 1;

/** One version of a fact, with where it came from. */
export interface ExportedFactVersion {
  id: string;
  content: string | null;
  forgotten: boolean;
  /** `private`: for them alone; `agent`: something they told the agent for everyone it talks to. */
  audience: Fact['audience'];
  category: string;
  trust: Fact['trust'];
  validFrom: string;
  validTo: string | null;
  recordedAt: string;
  supersededAt: string | null;
  supersededBy: string | null;
  restates: string | null;
  restatedAs: string | null;
  uses: number;
  lastUsedAt: string | null;
  provenance: { actorKind: string; actorId: string | null; channel: string | null; tool: string | null; untrustedInput: boolean; sourceMessageIds: string[] };
}

/** Everything Roster holds about one person, as they may take it away. */
export interface PersonExport {
  format: 'roster-person-export';
  formatVersion: number;
  exportedAt: string;
  person: { id: string; name: string; role: Person['role'] };
  /** Each fact with every version of it (oldest first), by agent. */
  facts: Array<{ agent: string; agentId: string; versions: ExportedFactVersion[] }>;
  /** Their own words and the agents' replies to them; content null once erased by a forget. */
  messages: Array<{ id: string; agent: string | null; role: string; channel: string | null; conversationId: string; content: string | null; forgotten: boolean; createdAt: string }>;
  identities: Array<{ id: string; channel: string; externalId: string; displayName: string | null; createdAt: string; unreachableAt: string | null }>;
  learningEvents: Array<{ id: string; agent: string; kind: string; text: string; channel: string | null; messageId: string | null; createdAt: string; harvestedAt: string | null }>;
  /** Lessons drawn from their words: each piece of evidence says whether it is theirs; another person's is only counted. */
  lessons: Array<{
    id: string;
    agent: string;
    text: string;
    status: string;
    version: number;
    approvedAt: string;
    retiredAt: string | null;
    evidence: Array<{ yours: true; kind: string | null; eventId: string | null; messageId: string | null; note: string | null } | { yours: false; kind: string | null }>;
  }>;
  /** Sign-ins and API tokens: ids, names and dates; never a token or its hash. */
  sessions: Array<{ id: string; createdAt: string; expiresAt: string; lastSeenAt: string }>;
  apiTokens: Array<{ id: string; name: string; createdAt: string; expiresAt: string | null; lastUsedAt: string | null }>;
}

export interface PersonExportDeps {
  database: Database;
  directory: Directory;
  memory: Memory;
}

const iso = (value: Date | string): string => new Date(value).toISOString();
const isoOrNull = (value: Date | string | null): string | null => (value === null ? null : iso(value));

/**
 * Everything held about `person`, read in their own scopes (one private
 * scope per agent), so row-level security decides every row about words and
 * memory as it does for the agents themselves. Only where no scope reaches
 * (which conversations they spoke in, their sessions and tokens) is an admin
 * read used, always filtered by the person, and never returning words.
 */
export async function exportPerson({ database, directory, memory }: PersonExportDeps, person: Person): Promise<PersonExport> {
  const agents = await directory.listAgents({ includeArchived: true });
  const agentNames = new Map(agents.map((agent) => [agent.id, agent.name] as const));
  const result: PersonExport = {
    format: 'roster-person-export',
    formatVersion: personExportFormatVersion,
    exportedAt: new Date().toISOString(),
    person: { id: person.id, name: person.name, role: person.role },
    facts: [],
    messages: [],
    identities: [],
    learningEvents: [],
    lessons: [],
    sessions: [],
    apiTokens: [],
  };
  for (const agent of agents) {
    const scope: Scope = { agentId: agent.id, personId: person.id, audience: 'private' };
    for (const chain of factChains(await memory.personVersions(scope))) result.facts.push({ agent: agent.name, agentId: agent.id, versions: chain.map(showVersion) });
    await database.withScope(scope, async (tx) => {
      // A one-to-one exchange between this agent and the person: the policy reads only theirs.
      const pair = await tx.query<MessageRow>(
        `select m.id, m.agent_id, m.role, c.channel, m.conversation_id, m.content, m.forgotten_at, m.created_at
         from messages m left join conversations c on c.id = m.conversation_id
         where m.visibility = 'pair' and m.role in ('person', 'agent') order by m.created_at, m.id`,
      );
      result.messages.push(...pair.rows.map((row) => showMessage(row, agentNames)));
      const events = await tx.query<LearningEventRow>(
        'select id, kind, text, channel, message_id, created_at, harvested_at from learning_events order by created_at, id',
      );
      result.learningEvents.push(...events.rows.map((row) => ({ id: row.id, agent: agent.name, kind: row.kind, text: row.text, channel: row.channel, messageId: row.message_id, createdAt: iso(row.created_at), harvestedAt: isoOrNull(row.harvested_at) })));
      // The agent's lessons this scope reads (agent-wide, and the person's own); kept when drawn from the person's words.
      const lessons = await tx.query<LessonRow>('select id, person_id, text, status, version, evidence, approved_at, retired_at from lessons order by created_at, id');
      for (const row of lessons.rows) {
        const lesson = showLesson(row, agent, person.id);
        if (lesson !== null) result.lessons.push(lesson);
      }
    });
  }
  const anyAgent = agents[0];
  if (anyAgent !== undefined) {
    // Said to everyone in a conversation (team mode, a group): no scope lists those conversations, so an admin read finds
    // which ones hold the person's lines, by id alone; the lines themselves are then read in the person's scope for each.
    const conversations = await database.adminScope("person export: the conversations a person's lines are in (ids only)", async (tx) => {
      const { rows } = await tx.query<{ conversation_id: string }>("select distinct conversation_id from messages where person_id = $1 and visibility = 'conversation'", [person.id]);
      return rows.map((row) => row.conversation_id);
    });
    for (const conversationId of conversations) {
      const scope: Scope = { agentId: anyAgent.id, personId: person.id, audience: 'private', conversationId };
      const { rows } = await database.withScope(scope, (tx) =>
        // Only the person's own lines and the agents' replies to them: in a group, others' lines are theirs.
        tx.query<MessageRow>(
          `select m.id, m.agent_id, m.role, c.channel, m.conversation_id, m.content, m.forgotten_at, m.created_at
           from messages m left join conversations c on c.id = m.conversation_id
           where m.visibility = 'conversation' and m.conversation_id = $1 and m.person_id = $2 and m.role in ('person', 'agent')
           order by m.created_at, m.id`,
          [conversationId, person.id],
        ),
      );
      result.messages.push(...rows.map((row) => showMessage(row, agentNames)));
    }
    const identities = await database.withScope({ agentId: anyAgent.id, personId: person.id, audience: 'private' }, (tx) =>
      tx.query<IdentityRow>('select id, channel, external_id, display_name, created_at, unreachable_at from identities order by created_at, id'),
    );
    result.identities = identities.rows.map((row) => ({ id: row.id, channel: row.channel, externalId: row.external_id, displayName: row.display_name, createdAt: iso(row.created_at), unreachableAt: isoOrNull(row.unreachable_at) }));
  }
  result.messages.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  // Sessions and tokens hold no words and no scope reads them (the sign-in tables are the server's own): an admin read
  // filtered by the person, choosing ids and dates only, never a token hash.
  await database.adminScope("person export: the person's own sessions and API tokens (ids and dates)", async (tx) => {
    const sessions = await tx.query<{ id: string; created_at: Date; expires_at: Date; last_seen_at: Date }>(
      'select id, created_at, expires_at, last_seen_at from web_sessions where person_id = $1 order by created_at, id',
      [person.id],
    );
    result.sessions = sessions.rows.map((row) => ({ id: row.id, createdAt: iso(row.created_at), expiresAt: iso(row.expires_at), lastSeenAt: iso(row.last_seen_at) }));
    const tokens = await tx.query<{ id: string; name: string; created_at: Date; expires_at: Date | null; last_used_at: Date | null }>(
      'select id, name, created_at, expires_at, last_used_at from api_tokens where person_id = $1 order by created_at, id',
      [person.id],
    );
    result.apiTokens = tokens.rows.map((row) => ({ id: row.id, name: row.name, createdAt: iso(row.created_at), expiresAt: isoOrNull(row.expires_at), lastUsedAt: isoOrNull(row.last_used_at) }));
  });
  return result;
}

interface MessageRow {
  id: string;
  agent_id: string | null;
  role: string;
  channel: string | null;
  conversation_id: string;
  content: string;
  forgotten_at: Date | null;
  created_at: Date;
}

interface LearningEventRow {
  id: string;
  kind: string;
  text: string;
  channel: string | null;
  message_id: string | null;
  created_at: Date;
  harvested_at: Date | null;
}

interface LessonRow {
  id: string;
  person_id: string | null;
  text: string;
  status: string;
  version: number;
  evidence: unknown;
  approved_at: Date;
  retired_at: Date | null;
}

interface IdentityRow {
  id: string;
  channel: string;
  external_id: string;
  display_name: string | null;
  created_at: Date;
  unreachable_at: Date | null;
}

function showMessage(row: MessageRow, agentNames: ReadonlyMap<string, string>): PersonExport['messages'][number] {
  const forgotten = row.forgotten_at !== null;
  return {
    id: row.id,
    agent: row.agent_id === null ? null : (agentNames.get(row.agent_id) ?? null),
    role: row.role,
    channel: row.channel,
    conversationId: row.conversation_id,
    content: forgotten ? null : row.content,
    forgotten,
    createdAt: iso(row.created_at),
  };
}

/**
 * A lesson that cites the person: one drawn from their words alone (it is
 * theirs), or an agent-wide one with a piece of evidence from them. Another
 * person's evidence is only marked as someone else's, without ids or words.
 */
function showLesson(row: LessonRow, agent: Agent, personId: string): PersonExport['lessons'][number] | null {
  const entries = Array.isArray(row.evidence) ? (row.evidence as Array<Record<string, unknown>>) : [];
  const own = row.person_id === personId;
  const theirs = (entry: Record<string, unknown>) => entry.personId === personId || (own && (entry.personId === undefined || entry.personId === null));
  if (!own && !entries.some(theirs)) return null;
  const text = (value: unknown) => (typeof value === 'string' ? value : null);
  return {
    id: row.id,
    agent: agent.name,
    text: row.text,
    status: row.status,
    version: row.version,
    approvedAt: iso(row.approved_at),
    retiredAt: isoOrNull(row.retired_at),
    evidence: entries.map((entry) =>
      theirs(entry)
        ? { yours: true as const, kind: text(entry.kind), eventId: text(entry.eventId), messageId: text(entry.messageId), note: text(entry.note) }
        : { yours: false as const, kind: text(entry.kind) },
    ),
  };
}

function showVersion(fact: Fact): ExportedFactVersion {
  return {
    id: fact.id,
    content: fact.content,
    forgotten: fact.trust === 'forgotten',
    audience: fact.audience,
    category: fact.category,
    trust: fact.trust,
    validFrom: iso(fact.validFrom),
    validTo: isoOrNull(fact.validTo),
    recordedAt: iso(fact.recordedAt),
    supersededAt: isoOrNull(fact.supersededAt),
    supersededBy: fact.supersededBy,
    restates: fact.restates,
    restatedAs: fact.restatedAs,
    uses: fact.uses,
    lastUsedAt: isoOrNull(fact.lastUsedAt),
    provenance: { actorKind: fact.actorKind, actorId: fact.actorId, channel: fact.channel, tool: fact.tool, untrustedInput: fact.untrustedInput, sourceMessageIds: fact.sourceMessageIds },
  };
}

/** Group versions into facts: rows joined by a successor or a restatement are one fact, oldest version first. */
function factChains(versions: readonly Fact[]): Fact[][] {
  const parent = new Map(versions.map((fact) => [fact.id, fact.id] as const));
  const root = (id: string): string => {
    let current = id;
    while (parent.get(current) !== current) current = parent.get(current)!;
    return current;
  };
  const join = (a: string, b: string | null) => {
    if (b === null || !parent.has(b)) return;
    parent.set(root(b), root(a));
  };
  for (const fact of versions) {
    join(fact.id, fact.supersededBy);
    join(fact.id, fact.restates);
    join(fact.id, fact.restatedAs);
  }
  const chains = new Map<string, Fact[]>();
  for (const fact of versions) {
    const key = root(fact.id);
    chains.set(key, [...(chains.get(key) ?? []), fact]);
  }
  return [...chains.values()];
}
