/**
 * `roster start` killed (kill -9) during a burst of turns, checked on any
 * installation: tests/faults-kill.test.ts runs it on the embedded database,
 * tests/server/faults-kill.test.ts on a server Postgres.
 */
import { randomUUID } from 'node:crypto';
import { until } from '@roster/channels/testing';
import { expect, onTestFinished } from 'vitest';
import type { TestInstallation } from './installation.js';
import { endRoster, runRoster, signInThrough, startListening } from './roster-process.js';

/** What the burst's turn `n` says, is answered and keeps. */
const burst = (n: number) => ({
  said: `remember that locker ${n} holds parcel ${n * 7}`,
  reply: `Noted: locker ${n} holds parcel ${n * 7}`,
  fact: `locker ${n} holds parcel ${n * 7}`,
});

interface StoredBurst {
  messages: Array<{ id: string; role: string; content: string }>;
  facts: Array<{ content: string; sources: string[]; embedded: boolean; events: number }>;
  /** Dedupe keys of the extract jobs in the outbox: `extract:<conversation>:<agent>:<message>`. */
  extracts: string[];
}

/** The signed-in person's web conversation, oldest first. */
async function transcript(address: string, cookie: string): Promise<Array<{ role: string; text: string }>> {
  const response = await fetch(`${address}/api/chat/history?limit=500`, { headers: { cookie } });
  return ((await response.json()) as { messages: Array<{ role: string; text: string }> }).messages;
}

/**
 * The next start opens cleanly, every acknowledged turn is there with its
 * reply and its memory, no turn is half-stored (a reply without its message,
 * fact or job; a fact without its message, vector or audit event), and
 * `roster audit verify` passes.
 */
export async function killDuringBurst(open: () => Promise<TestInstallation>): Promise<void> {
  const installation = await open();
  onTestFinished(() => installation.remove());
  const { env } = installation;
  expect((await runRoster(['agent', 'add', '--name', 'Scout', '--job', 'finds and checks sources'], env)).code).toBe(0);
  const first = await startListening(env);
  onTestFinished(() => endRoster(first.roster));
  expect(first.roster.output().stdout).toContain(`(${installation.kind} database`);
  await first.roster.waitForOutput(/Made the first owner/);
  const session = await signInThrough(first.address, env);

  // Two streams at a time, for as long as the process lives; a turn counts as acknowledged when its done event arrived.
  const acknowledged: number[] = [];
  let next = 0;
  let killed = false;
  const stream = async () => {
    while (!killed) {
      const n = (next += 1);
      try {
        const response = await fetch(`${first.address}/api/chat`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', cookie: session.cookie, 'x-csrf-token': session.csrfToken },
          body: JSON.stringify({ agent: 'Scout', message: burst(n).said, id: randomUUID() }),
        });
        if ((await response.text()).includes('event: done')) acknowledged.push(n);
      } catch {
        // Cut off by the kill: not acknowledged.
      }
    }
  };
  const streams = [stream(), stream()];
  while (acknowledged.length < 6) await new Promise((resolve) => setTimeout(resolve, 20));
  // Then inside a turn: once a message of the burst is stored and its reply not yet.
  await until(async () => (await transcript(first.address, session.cookie)).at(-1)?.role === 'person', 'a turn under way', 30_000);
  killed = true;
  first.roster.child.kill('SIGKILL');
  await Promise.all(streams);
  expect(acknowledged.length).toBeGreaterThanOrEqual(6);

  // The next start opens the database cleanly: no stale lock, socket or connection stops it.
  const second = await startListening(env);
  onTestFinished(() => endRoster(second.roster));
  const again = await signInThrough(second.address, env);
  const history = { messages: await transcript(second.address, again.cookie) };
  const memory = (await runRoster(['memory', 'list', '--agent', 'Scout', '--person', 'owner', '--json'], env)).stdout;
  const facts = (JSON.parse(memory) as Array<{ content: string }>).map((fact) => fact.content);
  for (const n of acknowledged) {
    const { said, reply, fact } = burst(n);
    const at = history.messages.findIndex((line) => line.role === 'person' && line.text === said);
    expect(at, said).toBeGreaterThanOrEqual(0);
    // Its reply right after it, and the fact it kept.
    expect(history.messages[at + 1], said).toMatchObject({ role: 'agent', text: reply });
    expect(facts).toContain(fact);
  }

  // Every turn of the burst, acknowledged or cut off, as the database holds it: whole, or only its first parts.
  const database = await installation.openDatabase();
  onTestFinished(() => database.close());
  const stored: StoredBurst = await database.adminScope('test: read the burst as it was stored', async (tx) => ({
    messages: (await tx.query<StoredBurst['messages'][number]>(`select id, role, content from messages where content like '%locker % holds parcel %'`)).rows,
    facts: (
      await tx.query<StoredBurst['facts'][number]>(
        `select f.content, f.source_message_ids::text[] as sources,
                exists (select 1 from fact_embeddings e where e.fact_id = f.id) as embedded,
                (select count(*)::int from memory_events v where v.target_kind = 'fact' and v.target_id = f.id::text) as events
         from facts f where f.content like 'locker % holds parcel %'`,
      )
    ).rows,
    extracts: (await tx.query<{ dedupe_key: string }>(`select dedupe_key from outbox where queue = 'extract'`)).rows.map((row) => row.dedupe_key),
  }));
  const unanswered: number[] = [];
  for (let n = 1; n <= next; n += 1) {
    const { said, reply, fact } = burst(n);
    const messages = stored.messages.filter((row) => row.role === 'person' && row.content === said);
    const replies = stored.messages.filter((row) => row.role === 'agent' && row.content === reply);
    const kept = stored.facts.filter((row) => row.content === fact);
    // Each part at most once.
    expect(messages.length, said).toBeLessThanOrEqual(1);
    expect(replies.length, reply).toBeLessThanOrEqual(1);
    expect(kept.length, fact).toBeLessThanOrEqual(1);
    const message = messages[0];
    if (kept[0] !== undefined) {
      // A fact is kept with the message it came from, its vector and its audit event.
      expect(message, `${fact}: its message`).toBeDefined();
      expect(kept[0], fact).toMatchObject({ sources: expect.arrayContaining([message!.id]), embedded: true });
      expect(kept[0].events, `${fact}: audit events`).toBeGreaterThanOrEqual(1);
    }
    if (replies[0] !== undefined) {
      // A reply is kept with its message, the fact it says it noted, and its follow-up job.
      expect(message, `${reply}: its message`).toBeDefined();
      expect(kept, `${reply}: its fact`).toHaveLength(1);
      expect(stored.extracts.filter((key) => key.endsWith(`:${message!.id}`)), `${reply}: its extract job`).toHaveLength(1);
    } else if (message !== undefined) unanswered.push(n);
  }
  // Only the turns under way when the process died may have been kept unanswered: at most one per stream, none acknowledged.
  expect(unanswered.length).toBeLessThanOrEqual(streams.length);
  for (const n of unanswered) expect(acknowledged).not.toContain(n);
  // The positive control: the acknowledged turns are among what was read.
  expect(stored.messages.filter((row) => row.role === 'agent').length).toBeGreaterThanOrEqual(acknowledged.length);

  const verified = await runRoster(['audit', 'verify', '--json'], env);
  expect(verified.code, verified.stderr).toBe(0);
  expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true });
  expect(await second.roster.stop()).toBe(0);
}
