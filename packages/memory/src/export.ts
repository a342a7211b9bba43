import type { Scope } from '@roster/db';
import type { Fact } from './types.js';

export type ExportFormat = 'json' | 'markdown';

/**
 * A person-readable copy of one scope's memory. Forgotten facts appear only
 * as the fact that something was forgotten, never with their words. The JSON
 * holds every belief with its valid and record time; the Markdown each
 * version as believed now.
 */
export function renderExport(scope: Scope, facts: readonly Fact[], format: ExportFormat): string {
  const exportedAt = new Date().toISOString();
  if (format === 'json') {
    return JSON.stringify(
      {
        exportedAt,
        agentId: scope.agentId,
        personId: scope.personId,
        facts: facts.map((fact) => ({
          id: fact.id,
          content: fact.content,
          category: fact.category,
          audience: fact.audience,
          trust: fact.trust,
          validFrom: fact.validFrom.toISOString(),
          validTo: fact.validTo?.toISOString() ?? null,
          recordedAt: fact.recordedAt.toISOString(),
          supersededAt: fact.supersededAt?.toISOString() ?? null,
          supersededBy: fact.supersededBy,
          restates: fact.restates,
          restatedAs: fact.restatedAs,
          uses: fact.uses,
        })),
      },
      null,
      2,
    );
  }
  const believed = (fact: Fact) => ['active', 'verified', 'candidate'].includes(fact.trust) && fact.supersededAt === null;
  const sections: Array<[string, (fact: Fact) => boolean]> = [
    ['What I know', (fact) => believed(fact) && fact.validTo === null],
    ['No longer true', (fact) => believed(fact) && fact.validTo !== null],
    ['Disputed', (fact) => fact.trust === 'disputed'],
    ['Faded (restorable)', (fact) => fact.trust === 'faded'],
    ['Corrected or rejected (never true)', (fact) => fact.trust === 'retracted' || fact.trust === 'rejected'],
  ];
  const lines = ['# Memory export', '', `Exported ${exportedAt}.`, ''];
  for (const [title, belongs] of sections) {
    // A belief restated by a later change is shown once, as restated.
    const chosen = facts.filter((fact) => fact.restatedAs === null && belongs(fact));
    if (chosen.length === 0) continue;
    lines.push(`## ${title}`, '');
    for (const fact of chosen) {
      const validity = fact.validTo === null ? `since ${day(fact.validFrom)}` : `${day(fact.validFrom)} to ${day(fact.validTo)}`;
      const marks = [fact.category !== 'general' ? fact.category : null, fact.trust === 'verified' ? 'verified' : null, fact.trust === 'candidate' ? 'unconfirmed' : null]
        .filter((mark) => mark !== null)
        .join(', ');
      lines.push(`- ${escapeMarkdown(fact.content ?? '')} (${validity}${marks === '' ? '' : `; ${marks}`})`);
    }
    lines.push('');
  }
  const forgotten = facts.filter((fact) => fact.trust === 'forgotten').length;
  if (forgotten > 0) lines.push(`${forgotten} fact${forgotten === 1 ? ' was' : 's were'} forgotten at your request; nothing of ${forgotten === 1 ? 'it' : 'them'} is kept.`, '');
  return lines.join('\n');
}

function day(date: Date): string {
  return date.toISOString().slice(0, 10);
}

function escapeMarkdown(text: string): string {
  return text.replace(/([\\`*_[\]<>])/g, '\\$1').replace(/\n+/g, ' ');
}
