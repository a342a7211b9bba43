import type { Scope } from '@roster/db';
import { RosterError } from '@roster/errors';
import { idleConversations, mark, parseStringArray } from './idle-conversations.js';
import type { JobDependencies, JobRun } from '../job-dependencies.js';
import type { JobPayload } from '../queues.js';

/** Extract: facts a person stated, from idle conversations, by the agent's engine (the offline engine extracts nothing). */
export async function extractJob(deps: JobDependencies, payload: JobPayload<'extract'>, _run: JobRun): Promise<Record<string, unknown>> {
  let extracted = 0;
  let refused = 0;
  const conversations = await idleConversations(deps, 'extracted_until', payload.idleMinutes, payload.conversationId, payload.agentId);
  const notes: string[] = [];
  for (const conversation of conversations) {
    const agent = await deps.directory.agentById(conversation.agentId);
    const engine = deps.engineFor(agent);
    const messages = conversation.messages.filter((message) => message.role === 'person' && message.personId === conversation.personId);
    if (engine.id === 'offline') {
      // The offline engine is not a language model: it extracts nothing, and says so.
      notes.push(`${agent.name}: the offline engine extracts nothing`);
    } else if (messages.length > 0 && conversation.personId !== null) {
      const answer = await engine.run({
        system: 'You extract facts a person stated about themselves. Answer only with a JSON array of short sentences, each one fact in the person’s words; [] when there are none.',
        memory: '',
        history: [],
        message: messages.map((message) => `- ${message.content}`).join('\n'),
        tools: [],
      });
      const facts = parseStringArray(answer.text);
      const scope: Scope = { agentId: agent.id, personId: conversation.personId, audience: 'private' };
      for (const content of facts) {
        try {
          const { created } = await deps.memory.remember(scope, {
            content,
            provenance: { actor: { kind: 'job', id: 'extract' }, sourceMessageIds: messages.map((message) => message.id), tool: 'extract' },
          });
          if (created) extracted += 1;
        } catch (error) {
          if (RosterError.isInstance(error) && ['tombstoned', 'rejected_statement', 'memory_input_invalid'].includes(error.code)) refused += 1;
          else throw error;
        }
      }
    }
    await mark(deps, conversation, 'extracted_until');
  }
  return { conversations: conversations.length, extracted, refused, notes };
}
