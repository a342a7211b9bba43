import type { Scope } from '@roster/db';
import type { Fact } from './types.js';

export type ExportFormat = 'json' | 'markdown';

/**
 * A person-readable copy of one scope's memory. Forgotten facts appear only
 * as the fact that something was forgotten, never with their words.
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
          uses: fact.uses,
        })),
      },
      null,
      2,
    );
  }
  const sections: Array<[string, (fact: Fact) => boolean]> = [
    ['What I know', (fact) => ['active', 'verified', 'candidate'].includes(fact.trust) && fact.validTo === null],
    ['No longer true', (fact) => ['active', 'verified', 'candidate'].includes(fact.trust) && fact.validTo !== null],
    ['Disputed', (fact) => fact.trust === 'disputed'],
    ['Faded (restorable)', (fact) => fact.trust === 'faded'],
    ['Corrected or rejected (never true)', (fact) => fact.trust === 'retracted' || fact.trust === 'rejected'],
  ];
  const lines = ['# Memory export', '', `Exported ${exportedAt}.`, ''];
  for (const [title, belongs] of sections) {
    const chosen = facts.filter(belongs);
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
