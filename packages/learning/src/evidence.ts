import { isUuid, type Database } from '@roster/db';

/**
 * One piece of a lesson's evidence, as the owner judges it: the learning
 * event (or the agent's note) and the message it came from.
 */
export interface EvidenceEntry {
  eventId: string | null;
  messageId: string | null;
  /** Whose statement it was, and their name. */
  personId: string | null;
  person: string | null;
  kind: string;
  /** An agent's note on why it proposed the lesson. */
  note?: string;
  /** The lesson paraphrases several people's statements. */
  paraphrased?: boolean;
  /**
   * Where and when it was said, and the words; null when neither the message
   * nor the learning event is kept. `text` is null once forgotten.
   */
  message: { channel: string | null; at: Date; text: string | null; forgotten: boolean } | null;
}

const textOf = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/**
 * A lesson's or an approval's evidence, as the owner reads it to decide:
 * each learning event with the message it came from (the door, the time,
 * the words unless forgotten) and whose it was. Only the agent's own events
 * are read; what a forget erased shows as forgotten, without words.
 */
export async function readEvidence(database: Database, agentId: string, evidence: readonly unknown[]): Promise<EvidenceEntry[]> {
  const entries = evidence.map((entry) => {
    const item = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>;
    const note = textOf(item.note);
    return {
      eventId: textOf(item.eventId),
      messageId: textOf(item.messageId),
      personId: textOf(item.personId),
      kind: textOf(item.kind) ?? (note === null ? 'unknown' : 'note'),
      ...(note === null ? {} : { note }),
      ...(item.paraphrased === true ? { paraphrased: true } : {}),
    };
  });
  const eventIds = entries.map((entry) => entry.eventId).filter(isUuid);
  const messageIds = entries.map((entry) => entry.messageId).filter(isUuid);
  if (eventIds.length === 0 && messageIds.length === 0 && entries.every((entry) => entry.personId === null)) {
    return entries.map((entry) => ({ ...entry, person: null, message: null }));
  }
  return database.adminScope('owner: read the evidence of a lesson', async (tx) => {
    const events = await tx.query<{ id: string; message_id: string | null; person_id: string | null; channel: string | null; text: string; created_at: Date }>(
      'select id, message_id, person_id, channel, text, created_at from learning_events where agent_id = $1 and id = any($2::uuid[])',
      [agentId, eventIds],
    );
    const eventById = new Map(events.rows.map((row) => [row.id, row] as const));
    const wanted = [...messageIds, ...events.rows.flatMap((row) => (row.message_id === null ? [] : [row.message_id]))];
    const messages = await tx.query<{ id: string; channel: string; person_id: string | null; content: string; forgotten: boolean; created_at: Date }>(
      `select m.id, c.channel, m.person_id, m.content, m.forgotten_at is not null as forgotten, m.created_at
         from messages m join conversations c on c.id = m.conversation_id where m.id = any($1::uuid[])`,
      [wanted],
    );
    const messageById = new Map(messages.rows.map((row) => [row.id, row] as const));
    const personIds = [...new Set([...entries.map((entry) => entry.personId), ...events.rows.map((row) => row.person_id)].filter(isUuid))];
    const people = await tx.query<{ id: string; name: string }>('select id, name from people where id = any($1::uuid[])', [personIds]);
    const nameOf = new Map(people.rows.map((row) => [row.id, row.name] as const));
    return entries.map((entry): EvidenceEntry => {
      const event = entry.eventId === null ? undefined : eventById.get(entry.eventId);
      const messageId = entry.messageId ?? event?.message_id ?? null;
      const message = messageId === null ? undefined : messageById.get(messageId);
      const personId = entry.personId ?? event?.person_id ?? message?.person_id ?? null;
      const said =
        message !== undefined
          ? { channel: message.channel, at: message.created_at, text: message.forgotten || message.content === '' ? null : message.content, forgotten: message.forgotten }
          : event !== undefined
            ? { channel: event.channel, at: event.created_at, text: event.text === '' ? null : event.text, forgotten: event.text === '' }
            : null;
      return { ...entry, personId, person: personId === null ? null : (nameOf.get(personId) ?? null), message: said };
    });
  });
}
