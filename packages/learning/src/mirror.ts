import type { Engine } from '@roster/contracts';
import type { Database } from '@roster/db';
import { RosterError } from '@roster/errors';
import type { Memory, SearchResult } from '@roster/memory';
import { z } from 'zod';

/** Five passes in a row graduate a case; a graduated case is checked again every 30 days. */
export const graduationStreak = 5;
export const recheckDays = 30;

export interface MirrorCase {
  id: string;
  agentId: string;
  personId: string | null;
  text: string;
  status: 'active' | 'graduated';
  streak: number;
  runs: number;
  lastRunAt: Date | null;
  graduatedAt: Date | null;
  nextCheckAt: Date | null;
}

export interface MirrorRunResult {
  caseId: string;
  verdict: 'pass' | 'fail' | 'error';
  reason: string;
  streak: number;
  status: 'active' | 'graduated';
}

const verdictSchema = z.strictObject({ verdict: z.enum(['pass', 'fail']), reason: z.string().max(2000) });

/** The judge's answer must be exactly `{ "verdict": "pass" | "fail", "reason": … }`; anything else is an error, never a pass. */
export function parseVerdict(text: string): { verdict: 'pass' | 'fail'; reason: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text.trim());
  } catch {
    throw new RosterError('judge_invalid', `The judge did not answer JSON: ${JSON.stringify(text.slice(0, 120))}.`);
  }
  const result = verdictSchema.safeParse(parsed);
  if (!result.success) throw new RosterError('judge_invalid', `The judge's JSON is not {"verdict": "pass"|"fail", "reason": …}: ${JSON.stringify(text.slice(0, 120))}.`);
  return result.data;
}

export const judgeSystem = `You judge whether an AI agent has learned from a correction a person gave it.
You get the correction and the agent's answer to a situation of the same kind.
Answer only with strict JSON: {"verdict": "pass" | "fail", "reason": "<one sentence>"}.
"pass" means the answer does not repeat the corrected mistake; "fail" means it does.`;

export function probeMessage(correction: string): string {
  return `You are in a situation of the same kind as this correction a person gave you: "${correction}". Say concretely what you do.`;
}

interface CaseRow {
  id: string;
  agent_id: string;
  person_id: string | null;
  text: string;
  status: 'active' | 'graduated';
  streak: number;
  runs: number;
  last_run_at: Date | null;
  graduated_at: Date | null;
  next_check_at: Date | null;
}
const toCase = (row: CaseRow): MirrorCase => ({
  id: row.id,
  agentId: row.agent_id,
  personId: row.person_id,
  text: row.text,
  status: row.status,
  streak: row.streak,
  runs: row.runs,
  lastRunAt: row.last_run_at,
  graduatedAt: row.graduated_at,
  nextCheckAt: row.next_check_at,
});

/** Tonight's cases of one agent: never-run first, then least recently run; graduated ones only when their monthly check is due. */
export async function dueCases(database: Database, agentId: string, limit: number, now = new Date(), rerunAfterHours = 20): Promise<MirrorCase[]> {
  return database.adminScope('mirror: choose tonight’s cases', async (tx) => {
    const { rows } = await tx.query<CaseRow>(
      `select * from mirror_cases
       where agent_id = $1 and text <> ''
         and (status = 'active' or (status = 'graduated' and next_check_at <= $3))
         -- A retried or repeated job the same night does not count a case twice.
         and (last_run_at is null or last_run_at <= $3 - make_interval(secs => $4 * 3600))
       order by last_run_at asc nulls first, created_at asc
       limit $2`,
      [agentId, limit, now, rerunAfterHours],
    );
    return rows.map(toCase);
  });
}

/** What the mirror says, once, when an agent has no engine that can judge its replays. */
export const noJudgeNotice = 'no judge configured: the offline engine cannot judge a replay, so corrections wait; set ROSTER_JUDGE_ENGINE to a language model';

/** Whether an engine can judge a replay: any language model can; the offline rule engine cannot. */
export function canJudge(judge: Engine): boolean {
  return judge.id !== 'offline';
}

/** The agent as the mirror replays it: its id, and whatever its prompt is built from. */
export interface MirrorAgent {
  id: string;
}

/** The person of a case, as a prompt names them. */
export interface MirrorPerson {
  id: string;
  name: string;
  role: 'owner' | 'member' | 'guest';
}

export interface MirrorOptions<A extends MirrorAgent = MirrorAgent> {
  database: Database;
  memory: Pick<Memory, 'search'>;
  engineFor: (agent: A) => Engine;
  judgeFor: (agent: A) => Engine;
  /**
   * The agent's real prompt, as its turns build it: the system prefix with
   * these lessons (and no memory tools), and the memory block of this person
   * and these facts.
   */
  prompt: (agent: A, input: { lessons: string[]; person: MirrorPerson | null; facts: SearchResult[] }) => { system: string; memory: string };
}

/**
 * Replay one case: the agent's real prompt (its own active lessons, the facts
 * the original person's scope would retrieve) answers a situation of the same
 * kind; a separate judge call decides. Every run is stored.
 */
export async function replayCase<A extends MirrorAgent>(options: MirrorOptions<A>, agent: A, mirrorCase: MirrorCase, now = new Date()): Promise<MirrorRunResult> {
  const { database, memory } = options;
  const lessons = await database.withScope({ agentId: agent.id, personId: null, audience: 'agent' }, async (tx) => {
    const { rows } = await tx.query<{ id: string; text: string }>(`select id, text from lessons where status = 'active' order by approved_at, id`);
    return rows;
  });
  let facts: SearchResult[] = [];
  let person: MirrorPerson | null = null;
  if (mirrorCase.personId !== null) {
    const scope = { agentId: agent.id, personId: mirrorCase.personId, audience: 'private' as const };
    facts = await memory.search(scope, mirrorCase.text, { limit: 8, tokenBudget: 800 });
    person = await database.adminScope('mirror: name the person of a case', async (tx) => {
      const { rows } = await tx.query<{ id: string; name: string; role: 'owner' | 'member' | 'guest' }>('select id, name, role from people where id = $1', [mirrorCase.personId]);
      return rows[0] ?? null;
    });
  }
  const engine = options.engineFor(agent);
  const judge = options.judgeFor(agent);
  // Without a judge nothing is replayed and no run is recorded: the mirror job and its report say so once.
  if (!canJudge(judge)) throw new RosterError('judge_unavailable', noJudgeNotice);
  let answer = '';
  let verdict: MirrorRunResult['verdict'];
  let reason: string;
  try {
    const prompt = options.prompt(agent, { lessons: lessons.map((lesson) => lesson.text), person, facts });
    const probe = await engine.run({
      system: prompt.system,
      memory: prompt.memory,
      history: [],
      message: probeMessage(mirrorCase.text),
      tools: [],
    });
    answer = probe.text;
    const judged = await judge.run({
      system: judgeSystem,
      memory: '',
      history: [],
      message: `Correction: ${mirrorCase.text}\n\nAgent's answer: ${answer}`,
      tools: [],
    });
    ({ verdict, reason } = parseVerdict(judged.text));
  } catch (error) {
    if (!RosterError.isInstance(error)) throw error;
    if (error.retryable) throw error;
    verdict = 'error';
    reason = error.message;
  }
  return database.adminScope('mirror: record a run', async (tx) => {
    // A case forgotten while it was replayed records no run: its answer and reason may repeat the words.
    const current = await tx.query<{ text: string }>('select text from mirror_cases where id = $1 for update', [mirrorCase.id]);
    if (current.rows[0] === undefined || current.rows[0].text === '') {
      return { caseId: mirrorCase.id, verdict: 'error' as const, reason: 'the case was forgotten while it was replayed', streak: 0, status: mirrorCase.status };
    }
    await tx.query(
      `insert into mirror_runs (case_id, agent_id, person_id, lessons_shown, answer, verdict, reason) values ($1, $2, $3, $4, $5, $6, $7)`,
      [mirrorCase.id, agent.id, mirrorCase.personId, JSON.stringify(lessons), answer.slice(0, 8000), verdict, reason.slice(0, 2000)],
    );
    let streak = mirrorCase.streak;
    let status = mirrorCase.status;
    let graduatedAt = mirrorCase.graduatedAt;
    let nextCheckAt = mirrorCase.nextCheckAt;
    if (verdict === 'pass') {
      streak += 1;
      if (status === 'active' && streak >= graduationStreak) {
        status = 'graduated';
        graduatedAt = now;
      }
      if (status === 'graduated') nextCheckAt = new Date(now.getTime() + recheckDays * 86_400_000);
    } else if (verdict === 'fail') {
      // A fail reactivates a graduated case and restarts the streak.
      streak = 0;
      status = 'active';
      graduatedAt = null;
      nextCheckAt = null;
    }
    await tx.query(
      `update mirror_cases set streak = $2, status = $3, graduated_at = $4, next_check_at = $5, runs = runs + 1, last_run_at = $6 where id = $1`,
      [mirrorCase.id, streak, status, graduatedAt, nextCheckAt, now],
    );
    return { caseId: mirrorCase.id, verdict, reason, streak, status };
  });
}

export interface MirrorReport {
  agentId: string;
  /** False when no engine can judge this agent's replays: nothing is replayed until one is configured. */
  judged: boolean;
  /** Cases whose last verdict passed, or that graduated. */
  learned: number;
  total: number;
  /** "N of M corrections no longer repeated". */
  summary: string;
  cases: Array<MirrorCase & { history: Array<{ verdict: string; reason: string; ranAt: Date; lessonsShown: unknown }> }>;
}

export async function mirrorReport(database: Database, agentId: string, options: { judged?: boolean } = {}): Promise<MirrorReport> {
  const judged = options.judged ?? true;
  return database.adminScope('owner: the mirror report', async (tx) => {
    const cases = (await tx.query<CaseRow>('select * from mirror_cases where agent_id = $1 order by created_at', [agentId])).rows.map(toCase);
    const runs = await tx.query<{ case_id: string; verdict: string; reason: string; ran_at: Date; lessons_shown: unknown }>(
      'select case_id, verdict, reason, ran_at, lessons_shown from mirror_runs where agent_id = $1 order by ran_at',
      [agentId],
    );
    const withHistory = cases.map((item) => ({
      ...item,
      history: runs.rows.filter((run) => run.case_id === item.id).map((run) => ({ verdict: run.verdict, reason: run.reason, ranAt: run.ran_at, lessonsShown: run.lessons_shown })),
    }));
    const learned = withHistory.filter((item) => item.status === 'graduated' || item.history.filter((run) => run.verdict !== 'error').at(-1)?.verdict === 'pass').length;
    const summary = `${learned} of ${cases.length} corrections no longer repeated${judged ? '' : ` (${noJudgeNotice})`}`;
    return { agentId, judged, learned, total: cases.length, summary, cases: withHistory };
  });
}

/** Per day (UTC), how many replays passed and failed: the line a chart of the mirror draws. Errors count as neither. */
export function passRateByDay(report: Pick<MirrorReport, 'cases'>): Array<{ date: string; passed: number; failed: number }> {
  const days = new Map<string, { passed: number; failed: number }>();
  for (const run of report.cases.flatMap((item) => item.history)) {
    if (run.verdict !== 'pass' && run.verdict !== 'fail') continue;
    const date = new Date(run.ranAt).toISOString().slice(0, 10);
    const day = days.get(date) ?? { passed: 0, failed: 0 };
    if (run.verdict === 'pass') day.passed += 1;
    else day.failed += 1;
    days.set(date, day);
  }
  return [...days.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([date, counts]) => ({ date, ...counts }));
}
