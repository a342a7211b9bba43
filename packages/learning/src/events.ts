import type { Channel } from '@roster/contracts';
import type { Database, Scope, WriteAlong } from '@roster/db';
import { redactSecrets, validateText } from '@roster/memory';
import { proposeApproval } from './approvals.js';

/** What a person's message can signal to the agent it was said to. */
export type LearningEventKind = 'correction' | 'remember' | 'preference' | 'negative-rating';

/** One message's signals, as the turn records them. */
interface SignalsInput {
  messageId: string;
  signals: readonly { kind: LearningEventKind }[];
  text: string;
  channel: Channel;
}

/**
 * Learning events: the signals people give an agent ("that's wrong",
 * "remember", a rating), the feedback an agent records and the lessons it
 * proposes, each under the
 * (agent, person) it was said to, written in that scope so row-level security
 * checks it. Redacted before it is stored; a forget erases it.
 */
export class LearningEventStore {
  constructor(private readonly database: Database) {}

  /**
   * The signals of one message as a write in the statement of the reply that
   * answers it (the turn stores them together: a reply is never kept without
   * them), in the agent's scope; null when there are none.
   */
  recordAlong(scope: Scope, input: SignalsInput): WriteAlong | null {
    if (input.signals.length === 0) return null;
    const value = JSON.stringify({
      agentId: scope.agentId,
      personId: scope.personId,
      conversationId: scope.conversationId ?? null,
      messageId: input.messageId,
      kinds: input.signals.map((signal) => signal.kind),
      text: redactSecrets(input.text).text.slice(0, 4000),
      channel: input.channel,
    });
    return {
      value,
      sql: (parameter, condition) =>
        `insert into learning_events (agent_id, person_id, conversation_id, message_id, kind, text, actor_kind, channel)
         select (j.p->>'agentId')::uuid, (j.p->>'personId')::uuid, (j.p->>'conversationId')::uuid, (j.p->>'messageId')::uuid,
                s.kind, j.p->>'text', 'person', j.p->>'channel'
         from (select ${parameter}::jsonb as p) j
         cross join lateral jsonb_array_elements_text(j.p->'kinds') with ordinality as s(kind, n)
         where ${condition}
         order by s.n
         returning 1`,
    };
  }

  /**
   * A correction made without a message ("that was wrong" from the page's
   * Correct… or `roster memory correct`): the same learning event a chat
   * correction records, so harvest makes it a mirror case for that agent and
   * person. It names no message; a forget of its words finds it by them.
   */
  async recordCorrection(scope: Scope, input: { text: string; channel: Channel }): Promise<void> {
    const text = redactSecrets(input.text).text.slice(0, 4000);
    await this.database.withScope(scope, async (tx) => {
      await tx.query(
        `insert into learning_events (agent_id, person_id, conversation_id, message_id, kind, text, actor_kind, channel)
         values ($1, $2, null, null, 'correction', $3, 'person', $4)`,
        [scope.agentId, scope.personId, text, input.channel],
      );
    });
  }

  /** The agent's record of a rating, from its feedback tool. */
  async recordFeedback(scope: Scope, input: { messageId: string; rating: 'positive' | 'negative'; comment: string; channel: Channel | 'internal' }): Promise<void> {
    await this.database.withScope(scope, async (tx) => {
      await tx.query(
        `insert into learning_events (agent_id, person_id, conversation_id, message_id, kind, text, actor_kind, channel)
         values ($1, $2, $3, $4, 'feedback', $5, 'agent', $6)`,
        [scope.agentId, scope.personId, scope.conversationId ?? null, input.messageId, redactSecrets(`${input.rating}: ${input.comment}`).text.slice(0, 4000), input.channel],
      );
    });
  }

  /** An agent proposes a lesson (its propose_lesson tool): a pending approval only a person can decide on. */
  async proposeLesson(scope: Scope, input: { agent: { id: string; name: string }; messageId: string; text: string; evidence?: string }): Promise<{ approvalId: string }> {
    const clean = redactSecrets(validateText(input.text, 'lesson')).text;
    const evidence = input.evidence === undefined ? [] : [{ note: redactSecrets(input.evidence).text, messageId: input.messageId }];
    return this.database.withScope(scope, (tx) =>
      proposeApproval(tx, { agentId: input.agent.id, personId: scope.personId, text: clean, evidence, confidence: null, proposedBy: { kind: 'agent', name: input.agent.name } }),
    );
  }
}
