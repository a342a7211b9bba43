import { api, segment, withQuery, type Fact, type FactVersion, type Tombstone } from '../api.ts';
import { h, replace, time, type Child } from '../dom.ts';
import { action, badge, empty, errorText, type PageContext } from '../ui.ts';

/** What a memory page shows, and at which moment. */
export interface MemoryView {
  context: PageContext;
  agent: string;
  /** The person filter of the page (the owner's), kept in links to other moments. */
  person: string;
  /** Person ids to names, for provenance. */
  names: Map<string, string>;
  /** Viewing the past: no actions, since only the current version changes. */
  past: boolean;
  /** The record time read (ISO), when the page shows what was believed then; null: now. */
  believedAt: string | null;
  reload(): void;
}

/** Trust levels a fact is believed and used in; the others are withheld from replies. */
const believedTrust = ['verified', 'active', 'candidate'];

/** Trust levels that say a version was never true: its content held at no valid time. */
const neverTrue: Record<string, string> = { retracted: 'it was wrong', rejected: 'it was refused' };

/**
 * A fact's trust as it stood at the moment the page reads. Retracting or
 * refusing a fact ends its record time: a version read at a moment before that
 * was still believed then, whatever it is now. (Which of active, verified or
 * candidate it was then is not kept; "believed then" says what is known.)
 */
export function trustThen(view: MemoryView, fact: Fact): string {
  if (view.believedAt === null || neverTrue[fact.trust] === undefined) return fact.trust;
  return fact.supersededAt !== null && fact.supersededAt > view.believedAt ? 'believed then' : fact.trust;
}

/** Valid time as a card says it: from when to when it holds (as believed at the moment read). */
export function validity(fact: Fact): Child {
  return [time(fact.validFrom), ' – ', fact.validTo === null ? 'still' : time(fact.validTo)];
}

/** Record time as a card says it: since when it is believed, and whether it still is. */
export function recorded(fact: Fact): Child {
  if (fact.supersededAt !== null) return [time(fact.recordedAt), ' until ', time(fact.supersededAt)];
  return [time(fact.recordedAt), believedTrust.includes(fact.trust) ? ' (still believed)' : ` (now ${fact.trust}: withheld)`];
}

export function tombstone(): HTMLElement {
  return h('p', { class: 'tombstone' }, h('strong', null, 'Forgotten.'), ' Its words are erased everywhere; a tombstone keeps them from being learned again unless said anew.');
}

/** A forgotten version in a history: where it was, without a word of it. */
function tombstoneLine(): HTMLElement {
  return h('p', { class: 'tombstone' }, 'Forgotten: content erased.');
}

/** Who asked to forget, as the page names them. */
function whoAsked(view: MemoryView, by: Tombstone['forgottenBy']): string {
  if (by === null) return 'someone';
  if (by.id !== null && by.id === view.context.me.id) return `${view.context.me.name} (you)`;
  if (by.name !== null) return by.name;
  if (by.kind === 'owner') return by.id === 'cli' ? 'the owner, on the command line' : 'the owner';
  if (by.kind === 'agent') return by.id === null ? 'the agent' : `the agent ${by.id}`;
  if (by.kind === 'job') return by.id === null ? 'a job' : `the ${by.id} job`;
  return by.kind;
}

/** Load a fact's versions into a box, or say why not. */
async function loadHistory(view: MemoryView, box: HTMLElement, factId: string, forgottenAt?: string): Promise<void> {
  replace(box, h('p', { class: 'loading' }, 'Loading history…'));
  try {
    const { versions } = await api<{ versions: FactVersion[] }>('GET', `/api/agents/${segment(view.agent)}/facts/${segment(factId)}/history`);
    replace(box, timeline(view, versions, forgottenAt));
  } catch (error) {
    replace(box, h('p', { class: 'outcome error', role: 'alert' }, errorText(error)));
  }
}

/** A button that shows a fact's versions in `box`. */
export function historyAction(view: MemoryView, box: HTMLElement, factId: string, forgottenAt?: string): HTMLElement {
  return action('History', () => loadHistory(view, box, factId, forgottenAt));
}

/** A forgotten fact where it was: when it was forgotten and who asked; not a word of it. */
export function tombstoneCard(view: MemoryView, buried: Tombstone, options: { openHistory?: boolean } = {}): HTMLElement {
  const historyBox = h('div', { class: 'history' });
  if (options.openHistory === true && buried.factId !== null) void loadHistory(view, historyBox, buried.factId, buried.forgottenAt);
  return h(
    'li',
    { class: 'card fact tombstoned', 'data-tombstone-id': buried.id, ...(buried.factId === null ? {} : { 'data-fact-id': buried.factId }) },
    h('div', { class: 'card-head' }, badge('forgotten')),
    h('p', { class: 'forgotten-when' }, 'Forgotten ', time(buried.forgottenAt), ', asked by ', h('strong', null, whoAsked(view, buried.forgottenBy)), '.'),
    tombstone(),
    buried.factId === null ? null : h('div', { class: 'actions', role: 'group', 'aria-label': 'Fact actions' }, historyAction(view, historyBox, buried.factId, buried.forgottenAt)),
    historyBox,
  );
}

const relationLabel: Record<string, string> = { earlier: 'Earlier version', this: 'This version', later: 'Later version' };

/**
 * What a history row says of a version's times, as they stand now: a
 * retracted or refused version was never true and was believed only until
 * then; a forgotten one was believed until it was forgotten. Only a version
 * still believed says "still".
 */
function versionTimes(version: FactVersion, forgottenAt: string | undefined): Child {
  const { fact } = version;
  const at = version.event?.occurredAt ?? null;
  const event = at === null ? null : ['; event ', time(at)];
  if (fact.content === null || fact.trust === 'forgotten') {
    return ['valid from ', time(fact.validFrom), '; believed from ', time(fact.recordedAt), ' until ', forgottenAt === undefined ? 'it was forgotten' : ['forgotten ', time(forgottenAt)], event];
  }
  const never = neverTrue[fact.trust];
  if (never !== undefined) {
    return ['never true: ', never, '; believed from ', time(fact.recordedAt), fact.supersededAt === null ? null : [' until ', time(fact.supersededAt)], event];
  }
  return ['valid ', validity(fact), '; recorded ', recorded(fact), event];
}

/** The versions of a fact, oldest first; a forgotten one is a tombstone without content. */
function timeline(view: MemoryView, versions: FactVersion[], forgottenAt?: string): HTMLElement {
  const ordered = [...versions].sort((a, b) => a.fact.recordedAt.localeCompare(b.fact.recordedAt));
  return h(
    'section',
    { class: 'timeline', 'aria-label': 'History' },
    h('h4', null, 'History'),
    ordered.length === 0
      ? empty('No versions.')
      : h(
          'ol',
          null,
          ordered.map((version) => {
            const gone = version.fact.content === null || version.fact.trust === 'forgotten';
            const at = version.event?.occurredAt ?? null;
            return h(
              'li',
              { class: gone ? 'version tombstoned' : 'version' },
              h('div', { class: 'card-head' }, h('strong', null, relationLabel[version.relation] ?? version.relation), badge(version.fact.trust), version.event === null ? null : h('span', { class: 'tag' }, version.event.action)),
              gone ? tombstoneLine() : h('p', { class: 'content' }, version.fact.content),
              h('p', { class: 'hint times' }, versionTimes(version, forgottenAt)),
              // The moment this version was recorded (a changed version's row is a later restatement of it: its event tells when it was first believed).
              gone || at === null
                ? null
                : h('p', null, h('a', { href: withQuery('/memory', { agent: view.agent, person: view.person, recordedAt: at }), class: 'believed-then' }, 'What it believed then')),
            );
          }),
        ),
  );
}
