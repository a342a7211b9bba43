import { normalizeText } from '@roster/memory';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLoopFixture, type LoopFixture } from './support/learning-loop.js';
import { scanDatabase } from './support/scan.js';

/**
 * One normal form of text for SQL and JavaScript: forget's scrubbing runs in
 * SQL, tombstone matching in JavaScript, and both must agree on accents, case
 * and whole words, in Italian as in English.
 */
let loop: LoopFixture;

beforeAll(async () => {
  loop = await startLoopFixture();
});

afterAll(async () => {
  await loop?.cleanup();
});

const say = (text: string) =>
  loop.roster.core.handle({ channel: 'cli', conversation: { externalId: 'scout-ada', kind: 'dm' }, sender: { personId: loop.ids.ada }, text }, { agent: 'Scout' });

describe('one normalisation for SQL and JavaScript', () => {
  it('gives the same normal form in both, for accents, case, ligatures, apostrophes and scripts', async () => {
    const samples = [
      'Mia nonna abita a Forlì',
      'PERCHÉ è così',
      "L'università di Bologna",
      'Crème brûlée, naïve café',
      'ﬁnal ﬂoor №5',
      'Ζωή στην Αθήνα',
      'Ünïcödé   spaces\tand\nlines',
      'Straße',
      'İstanbul',
      '李小龍 2024',
    ];
    const sql = await loop.test.database.adminScope('test: normalise in SQL', async (tx) =>
      (await tx.query<{ n: string }>('select roster_normalize(t) as n from unnest($1::text[]) with ordinality as s(t, i) order by i', [samples])).rows.map((row) => row.n),
    );
    expect(sql).toEqual(samples.map(normalizeText));
    // Positive control: the forms are really folded.
    expect(normalizeText('Mia nonna abita a Forlì')).toBe('mia nonna abita a forli');
  });

  it('forgets an Italian fact asked without its accent, erasing the accented words everywhere, and keeps an unrelated one', async () => {
    await say('ricorda che mia nonna abita a Forlì vicino al Duomo');
    await say('ricorda che il mio gatto si chiama Birillo');
    expect(Object.keys(await scanDatabase(loop.test.database, ['forlì']))).toEqual(expect.arrayContaining(['messages.content', 'facts.content']));

    const forget = await say('dimentica che mia nonna abita a Forli vicino al duomo');
    expect(forget.replies[0]?.text).toMatch(/^(Forgotten\.|Dimenticato\.)$/);
    expect(await scanDatabase(loop.test.database, ['forlì', 'forli'])).toEqual({});
    // The tombstone refuses the words again, accents or not.
    expect(await loop.roster.memory.isTombstoned({ agentId: loop.ids.scout, personId: loop.ids.ada, audience: 'private' }, 'Mia nonna abita a FORLÌ vicino al Duomo')).toBe(true);
    const cat = await say('cosa sai di Birillo');
    expect(cat.replies[0]?.text).toBe('- il mio gatto si chiama Birillo');
  });
});
