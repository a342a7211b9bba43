import type { Database } from '@roster/db';
import { openTestDatabase, type TestDatabase } from '@roster/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listApprovals } from './approvals.js';
import { LearningEventStore } from './events.js';
import { harvestCorrections } from './harvest.js';
import { mirrorReport } from './mirror.js';

let test: TestDatabase;
let db: Database;
const ids = { scout: '', coder: '', ada: '' };

beforeAll(async () => {
  test = await openTestDatabase();
  db = test.database;
  await db.adminScope('test: seed agents and a person', async (tx) => {
    const agents = await tx.query<{ id: string; name: string }>(`insert into agents (name, job) values ('Scout', 'finds things'), ('Coder', 'writes code') returning id, name`);
    const people = await tx.query<{ id: string }>(`insert into people (name, role) values ('Ada', 'owner') returning id`);
    ids.scout = agents.rows.find((row) => row.name === 'Scout')!.id;
    ids.coder = agents.rows.find((row) => row.name === 'Coder')!.id;
    ids.ada = people.rows[0]!.id;
  });
});

afterAll(async () => {
  await test?.cleanup();
});

describe('the learning loop’s own tables', () => {
  it('a correction said to one agent becomes a mirror case of that agent only, harvested once', async () => {
    const events = new LearningEventStore(db);
    await events.recordCorrection({ agentId: ids.scout, personId: ids.ada, audience: 'private' }, { text: 'That was wrong: the meeting is on Tuesdays', channel: 'web' });
    expect(await harvestCorrections(db)).toEqual({ events: 1, casesCreated: 1 });
    const scout = await mirrorReport(db, ids.scout);
    expect(scout.cases.map((item) => ({ text: item.text, personId: item.personId, status: item.status }))).toEqual([
      { text: 'That was wrong: the meeting is on Tuesdays', personId: ids.ada, status: 'active' },
    ]);
    expect((await mirrorReport(db, ids.coder)).total).toBe(0);
    expect(await harvestCorrections(db)).toEqual({ events: 0, casesCreated: 0 });
  });

  it('an agent proposes a lesson for the person it talks to, as a pending approval, and cannot propose one as another agent', async () => {
    const events = new LearningEventStore(db);
    const scope = { agentId: ids.scout, personId: ids.ada, audience: 'private' as const };
    const { approvalId } = await events.proposeLesson(scope, { agent: { id: ids.scout, name: 'Scout' }, messageId: 'none', text: 'Give meeting days with their dates.' });
    await expect(events.proposeLesson(scope, { agent: { id: ids.coder, name: 'Coder' }, messageId: 'none', text: 'Write tests before code.' })).rejects.toThrow(/row-level security/);
    expect(await listApprovals(db, { agentId: ids.scout })).toMatchObject([
      { id: approvalId, text: 'Give meeting days with their dates.', status: 'pending', proposedByKind: 'agent', proposedBy: 'Scout', confidence: null, evidence: [] },
    ]);
    expect(await listApprovals(db, { agentId: ids.coder })).toEqual([]);
  });
});
