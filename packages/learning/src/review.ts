import type { Engine } from '@roster/contracts';
import type { Database } from '@roster/db';
import { containsSecret, contentHash, isNearDuplicate, minhash, normalizeText, redactSecrets, type Memory } from '@roster/memory';
import { z } from 'zod';
import { proposeApproval } from './approvals.js';
import { lessonTextProblem } from './lessons.js';
import { canJudge } from './mirror.js';

/** The words of a learning event with its signal phrase taken off: "from now on, answer in Italian" → "Answer in Italian." */
export function lessonText(text: string): string {
  const stripped = text
    .trim()
    .replace(/^(that's wrong|that is wrong|you're wrong|you are wrong|no|actually|from now on|next time|la prossima volta|d'ora in poi|da ora in poi|hai sbagliato|sbagliato)[\s,:;.!-]*/iu, '')
    .trim();
  if (stripped === '') return '';
  const sentence = stripped.charAt(0).toUpperCase() + stripped.slice(1);
  return /[.!?]$/.test(sentence) ? sentence : `${sentence}.`;
}

interface ReviewEvent {
  id: string;
  person_id: string | null;
  message_id: string | null;
  text: string;
  kind: string;
}

interface Group {
  /** Each person's own statement, as lessonText made it. */
  texts: Map<string | null, string>;
  signature: number[];
  evidence: ReviewEvent[];
}

export const paraphraseSystem = `You turn corrections that several people gave an AI agent into one general instruction for that agent.
Write the instruction in your own words, as a rule for the agent ("Give prices in euros first."), one or two sentences.
Never copy a person's sentence, never include names, places, numbers, codes or any detail about a person.
Answer only with JSON: {"lesson": "…"}; answer {"lesson": ""} when the corrections share no general rule.`;

const paraphraseAnswer = z.object({ lesson: z.string() });

/**
 * One person's words never reach another person's prompt: a lesson drawn from
 * several people's corrections is the judge engine's paraphrase, and is
 * refused when it repeats any of them; a lesson drawn from one person's stays
 * that person's (it rides only in their conversations).
 */
async function paraphrase(judge: Engine, group: Group): Promise<string | null> {
  const statements = [...group.texts.values()];
  const answer = await judge.run({
    system: paraphraseSystem,
    memory: '',
    history: [],
    message: statements.map((text) => `- ${text}`).join('\n'),
    tools: [],
  });
  let parsed: z.infer<typeof paraphraseAnswer>;
  try {
    parsed = paraphraseAnswer.parse(JSON.parse(answer.text.trim()));
  } catch {
    return null;
  }
  const text = parsed.lesson.trim();
  if (text === '' || containsSecret(text)) return null;
  // A paraphrase that is one person's sentence again, or holds it whole, is no paraphrase.
  const normalized = ` ${normalizeText(text)} `;
  const signature = minhash(text);
  const repeats = statements.some((statement) => isNearDuplicate(minhash(statement), signature) || normalized.includes(` ${normalizeText(statement).replace(/\s*$/, '')} `));
  return repeats ? null : text;
}

/** What the review works with: the database, memory's tombstones, and the agent's judge (for paraphrases). */
export interface ReviewOptions {
  database: Database;
  memory: Pick<Memory, 'isTombstoned'>;
  agent: { id: string; name: string };
  judge: Engine;
}

/**
 * Review: statements people made to an agent that say the same thing (near
 * duplicates), said at least twice, become a proposed lesson that only a
 * person can approve. With an engine that can judge, statements of several
 * people are grouped and proposed as its paraphrase, agent-wide; without one,
 * groups stay per person and a lesson is that person's alone.
 */
export async function reviewAgent(options: ReviewOptions): Promise<{ proposed: number; skipped: string[] }> {
  const { database, memory, agent, judge } = options;
  let proposed = 0;
  const skipped: string[] = [];
  const acrossPeople = canJudge(judge);
  const events = await database.adminScope('review: read learning events', async (tx) => {
    const { rows } = await tx.query<ReviewEvent>(
      `select id, person_id, message_id, text, kind from learning_events
       where agent_id = $1 and actor_kind = 'person' and kind in ('correction', 'preference', 'negative-rating') and text <> ''
       order by created_at`,
      [agent.id],
    );
    return rows;
  });
  const groups: Group[] = [];
  for (const event of events) {
    const text = lessonText(event.text);
    if (text === '') continue;
    if (event.person_id !== null && (await memory.isTombstoned({ agentId: agent.id, personId: event.person_id, audience: 'private' }, text))) continue;
    const signature = minhash(text);
    const group = groups.find((candidate) => (acrossPeople || candidate.texts.has(event.person_id)) && isNearDuplicate(candidate.signature, signature));
    if (group === undefined) groups.push({ texts: new Map([[event.person_id, text]]), signature, evidence: [event] });
    else {
      group.evidence.push(event);
      group.texts.set(event.person_id, text);
    }
  }
  for (const group of groups.filter((candidate) => candidate.evidence.length >= 2)) {
    const people = [...group.texts.keys()];
    const shared = people.length > 1;
    const drafted = shared ? await paraphrase(judge, group) : group.texts.get(people[0]!)!;
    if (drafted === null) {
      skipped.push(`${agent.name}: the judge gave no usable paraphrase of ${people.length} people's corrections`);
      continue;
    }
    const outcome = await propose(database, agent, { text: redactSecrets(drafted).text, personId: shared ? null : people[0]!, signature: group.signature, evidence: group.evidence, paraphrased: shared });
    if (outcome === null) proposed += 1;
    else skipped.push(`${agent.name}: ${outcome}`);
  }
  return { proposed, skipped };
}

async function propose(
  database: Database,
  agent: { id: string },
  draft: { text: string; personId: string | null; signature: number[]; evidence: ReviewEvent[]; paraphrased: boolean },
): Promise<string | null> {
  return database.adminScope('review: propose a lesson for approval', async (tx) => {
    const problem = await lessonTextProblem(tx, agent.id, draft.text);
    if (problem !== null) return problem;
    const existing = await tx.query<{ text: string }>(`select text from approvals where agent_id = $1 and status in ('pending', 'rejected')`, [agent.id]);
    if (existing.rows.some((row) => contentHash(row.text) === contentHash(draft.text) || isNearDuplicate(minhash(row.text), draft.signature) || isNearDuplicate(minhash(row.text), minhash(draft.text)))) {
      return 'already proposed';
    }
    // The evidence the owner sees beside the text: which statements, by whom, and whether the text is a paraphrase.
    const evidence = draft.evidence.map((event) => ({ eventId: event.id, messageId: event.message_id, personId: event.person_id, kind: event.kind, ...(draft.paraphrased ? { paraphrased: true } : {}) }));
    await proposeApproval(tx, {
      agentId: agent.id,
      personId: draft.personId,
      text: draft.text,
      evidence,
      confidence: Math.min(1, draft.evidence.length / 5),
      proposedBy: { kind: 'job', name: 'review' },
    });
    await tx.query('update learning_events set reviewed_at = now() where id = any($1)', [draft.evidence.map((event) => event.id)]);
    return null;
  });
}
