import { api, segment, withQuery, type Fact, type FactGroup, type FactVersion, type PersonWithIdentities, type SourceMessage, type Tombstone } from '../api.ts';
import { field, h, replace, select, time, type Child } from '../dom.ts';
import { action, agentChooser, badge, confirmStep, empty, errorText, form, isOwner, listAgents, loading, outcome, text, type PageContext } from '../ui.ts';
import { dayAndTime, endOfDay, moment } from './memory-time.ts';

/** Trust levels in the order the page lists them: what is read first, then what reads withhold. */
const trustOrder = ['verified', 'active', 'candidate', 'disputed', 'retracted', 'rejected', 'faded', 'forgotten'];

const trustMeaning: Record<string, string> = {
  verified: 'confirmed by a person',
  active: 'believed and used',
  candidate: 'not yet trusted: extracted by the model or written after reading untrusted content',
  disputed: 'contradicted; withheld from replies',
  retracted: 'it was wrong; withheld',
  rejected: 'refused; withheld',
  faded: 'unused for long; withheld until restored',
  forgotten: 'erased; only a tombstone remains',
};

function tombstone(): HTMLElement {
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

/** A forgotten fact where it was: when it was forgotten and who asked; not a word of it. */
function tombstoneCard(view: MemoryView, buried: Tombstone, options: { openHistory?: boolean } = {}): HTMLElement {
  const historyBox = h('div', { class: 'history' });
  const showHistory = async (): Promise<void> => {
    if (buried.factId === null) return;
    replace(historyBox, h('p', { class: 'loading' }, 'Loading history…'));
    try {
      const { versions } = await api<{ versions: FactVersion[] }>('GET', `/api/agents/${segment(view.agent)}/facts/${segment(buried.factId)}/history`);
      replace(historyBox, timeline(view, versions));
    } catch (error) {
      replace(historyBox, h('p', { class: 'outcome error', role: 'alert' }, errorText(error)));
    }
  };
  if (options.openHistory === true) void showHistory();
  return h(
    'li',
    { class: 'card fact tombstoned', 'data-tombstone-id': buried.id, ...(buried.factId === null ? {} : { 'data-fact-id': buried.factId }) },
    h('div', { class: 'card-head' }, badge('forgotten')),
    h('p', { class: 'forgotten-when' }, 'Forgotten ', time(buried.forgottenAt), ', asked by ', h('strong', null, whoAsked(view, buried.forgottenBy)), '.'),
    tombstone(),
    buried.factId === null ? null : h('div', { class: 'actions', role: 'group', 'aria-label': 'Fact actions' }, action('History', showHistory)),
    historyBox,
  );
}

/** The heading of a list of cards, with how many it holds. */
function trustHeading(trust: string, count: number): HTMLElement {
  return h('h3', null, `${trust[0]!.toUpperCase()}${trust.slice(1)} `, h('span', { class: 'count' }, `(${count})`), h('small', { class: 'hint' }, ` ${trustMeaning[trust] ?? ''}`));
}

/** A group's tombstones, newest first, under "Forgotten (n)". */
function forgottenSection(view: MemoryView, tombstones: Tombstone[]): HTMLElement {
  return h('section', { class: 'trust', 'data-trust': 'forgotten' }, trustHeading('forgotten', tombstones.length), h('ul', { class: 'cards' }, tombstones.map((item) => tombstoneCard(view, item))));
}

/** Say how many cards a trust section holds now; an emptied one goes. */
function recount(section: Element): void {
  const count = section.querySelectorAll(':scope > ul.cards > li').length;
  if (count === 0) section.remove();
  else {
    const label = section.querySelector(':scope > h3 .count');
    if (label !== null) label.textContent = `(${count})`;
  }
}

interface MemoryView {
  context: PageContext;
  agent: string;
  /** The person filter of the page (the owner's), kept in links to other moments. */
  person: string;
  /** Person ids to names, for provenance. */
  names: Map<string, string>;
  /** Viewing the past: no actions, since only the current version changes. */
  past: boolean;
  reload(): void;
}

function provenance(view: MemoryView, fact: Fact): Child {
  const source = fact.provenance;
  const name = source.actorId === null ? undefined : view.names.get(source.actorId);
  const parts: Child[] =
    source.actorKind === 'person'
      ? ['told by ', h('strong', null, name ?? 'a person')]
      : source.actorKind === 'owner'
        ? ['set by ', h('strong', null, name ?? 'the owner'), ' (owner)']
        : source.actorKind === 'agent'
          ? ['written by ', h('strong', null, source.actorId === null ? 'the agent' : `the agent ${source.actorId}`)]
          : source.actorKind === 'job'
            ? ['written by ', h('strong', null, source.actorId === null ? 'a job' : `the ${source.actorId} job`)]
            : ['written by ', h('strong', null, source.actorKind)];
  if (source.channel !== null) parts.push(` on ${source.channel}`);
  if (source.tool !== null) parts.push(' with ', h('code', null, source.tool));
  const count = source.sourceMessageIds.length;
  const sources = source.sources ?? [];
  if (count === 0) return parts;
  parts.push(`, from ${count} ${count === 1 ? 'message' : 'messages'}`);
  const missing = count - sources.length;
  return [
    parts,
    h('ul', { class: 'sources', 'aria-label': 'Where it came from' }, sources.map((message) => sourceLine(view, message))),
    missing > 0 ? h('p', { class: 'hint' }, `${missing} ${missing === 1 ? 'message is' : 'messages are'} no longer kept.`) : null,
  ];
}

/** A message a fact came from: the door, the time, who, and the words when they are the reader's own (a tombstone once forgotten). */
function sourceLine(view: MemoryView, message: SourceMessage): HTMLElement {
  const who = message.role === 'agent' ? (message.agent ?? 'the agent') : message.person === null ? 'someone' : message.person.id === view.context.me.id ? 'you' : message.person.name;
  return h(
    'li',
    { class: message.forgotten ? 'source forgotten' : 'source', 'data-message': message.id },
    h('span', { class: 'tag channel' }, message.channel),
    ' ',
    time(message.at),
    ', ',
    who,
    message.role === 'agent' ? ' answered' : ' said',
    ': ',
    message.forgotten
      ? h('span', { class: 'tombstone' }, 'forgotten: its words are erased.')
      : message.text !== null
        ? h('q', null, message.text)
        : h('span', { class: 'hint' }, 'their words are theirs: not shown here.'),
  );
}

function validity(fact: Fact): Child {
  return [time(fact.validFrom), ' – ', fact.validTo === null ? 'still' : time(fact.validTo)];
}

function recorded(fact: Fact): Child {
  return [time(fact.recordedAt), fact.supersededAt === null ? ' (still believed)' : [' until ', time(fact.supersededAt)]];
}

function factCard(view: MemoryView, fact: Fact): HTMLElement {
  const card = h('li', { class: 'card fact', 'data-fact-id': fact.id });
  const report = outcome();
  const editor = h('div', { class: 'editor' });
  const historyBox = h('div', { class: 'history' });
  const base = `/api/agents/${segment(view.agent)}/facts/${segment(fact.id)}`;
  const forgotten = fact.content === null || fact.trust === 'forgotten';

  const change = (kind: 'correct' | 'update'): void => {
    const content = h('textarea', { name: 'content', rows: '2', required: true, maxlength: '2000' });
    content.value = fact.content ?? '';
    const label = kind === 'correct' ? 'It was wrong; the right content is' : 'It changed; from now on it is';
    const hint = kind === 'correct' ? 'The old content is retracted: it was never true.' : 'The old content stays true until now, so “what was it before?” stays answerable.';
    const editorForm = form({
      label: kind === 'correct' ? 'Correct the fact' : 'Update the fact',
      submit: kind === 'correct' ? 'Save correction' : 'Save update',
      fields: [field(label, content, hint)],
      async run(data) {
        await api('POST', `${base}/${kind}`, { content: text(data, 'content') });
        view.context.announce(kind === 'correct' ? 'The fact was corrected.' : 'The fact was updated.');
        view.reload();
      },
    });
    editorForm.querySelector('.actions')?.appendChild(action('Cancel', () => replace(editor)));
    replace(editor, editorForm);
    content.focus();
  };

  const showHistory = async (): Promise<void> => {
    replace(historyBox, h('p', { class: 'loading' }, 'Loading history…'));
    try {
      const { versions } = await api<{ versions: FactVersion[] }>('GET', `${base}/history`);
      replace(historyBox, timeline(view, versions));
    } catch (error) {
      replace(historyBox, h('p', { class: 'outcome error', role: 'alert' }, errorText(error)));
    }
  };

  const forget = async (): Promise<void> => {
    const confirmed = await confirmStep({
      title: 'Forget this fact?',
      body: h('p', null, 'Every version of it and every copy (messages, lessons, mirror cases) is erased, and it cannot come back unless said again. This cannot be undone.'),
      confirm: 'Forget',
    });
    if (!confirmed) return;
    let buried: Tombstone;
    try {
      ({ tombstone: buried } = await api<{ tombstone: Tombstone }>('POST', `${base}/forget`));
    } catch (error) {
      report.fail(error);
      return;
    }
    // The card keeps no word of it: it leaves its trust's list and becomes a tombstone under Forgotten, as a reload shows it.
    const section = card.closest('section.trust');
    const group = card.closest('section.group');
    // Then the history as the server tells it now.
    const grave = tombstoneCard(view, buried, { openHistory: true });
    if (group === null) card.replaceWith(grave);
    else {
      card.remove();
      if (section !== null) recount(section);
      let forgottenList = group.querySelector(':scope > section.trust[data-trust="forgotten"] > ul.cards');
      if (forgottenList === null) {
        group.append(forgottenSection(view, []));
        forgottenList = group.querySelector(':scope > section.trust[data-trust="forgotten"] > ul.cards')!;
      }
      forgottenList.prepend(grave);
      recount(forgottenList.parentElement!);
    }
    view.context.announce('The fact was forgotten.');
  };

  const actions: Child[] =
    view.past || forgotten
      ? [action('History', showHistory)]
      : [
          fact.trust === 'verified' ? null : action('Confirm', async () => {
            try {
              await api('POST', `${base}/confirm`);
              view.context.announce('The fact was confirmed.');
              view.reload();
            } catch (error) {
              report.fail(error);
            }
          }),
          action('Correct…', () => change('correct')),
          action('Update…', () => change('update')),
          action('History', showHistory),
          action('Forget…', forget, { kind: 'danger' }),
        ];

  replace(
    card,
    h('div', { class: 'card-head' }, badge(fact.trust), h('span', { class: 'tag' }, fact.category), h('span', { class: 'tag' }, fact.audience === 'agent' ? 'agent-wide' : 'private')),
    forgotten ? tombstone() : h('p', { class: 'content' }, fact.content),
    h(
      'dl',
      { class: 'facts-inline' },
      h('dt', null, 'Valid'),
      h('dd', null, validity(fact)),
      h('dt', null, 'Recorded'),
      h('dd', null, recorded(fact)),
      h('dt', null, 'Provenance'),
      h('dd', { class: 'provenance' }, provenance(view, fact)),
      h('dt', null, 'Uses'),
      h('dd', null, String(fact.uses), fact.lastUsedAt === null ? null : [', last ', time(fact.lastUsedAt)]),
    ),
    h('div', { class: 'actions', role: 'group', 'aria-label': 'Fact actions' }, actions),
    report.element,
    editor,
    historyBox,
  );
  return card;
}

const relationLabel: Record<string, string> = { earlier: 'Earlier version', this: 'This version', later: 'Later version' };

/** The versions of a fact, oldest first; a forgotten one is a tombstone without content. */
function timeline(view: MemoryView, versions: FactVersion[]): HTMLElement {
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
              h('p', { class: 'hint' }, 'valid ', validity(version.fact), '; recorded ', recorded(version.fact), at === null ? null : ['; event ', time(at)]),
              // The moment this version was recorded (a changed version's row is a later restatement of it: its event tells when it was first believed).
              gone || at === null
                ? null
                : h('p', null, h('a', { href: withQuery('/memory', { agent: view.agent, person: view.person, recordedAt: at }), class: 'believed-then' }, 'What it believed then')),
            );
          }),
        ),
  );
}

function byTrust(facts: Fact[]): Array<[string, Fact[]]> {
  const groups = new Map<string, Fact[]>();
  for (const fact of facts) groups.set(fact.trust, [...(groups.get(fact.trust) ?? []), fact]);
  const known = trustOrder.filter((trust) => groups.has(trust));
  const others = [...groups.keys()].filter((trust) => !trustOrder.includes(trust)).sort();
  return [...known, ...others].map((trust) => [trust, groups.get(trust)!.sort((a, b) => b.recordedAt.localeCompare(a.recordedAt))]);
}

export async function memoryPage(context: PageContext): Promise<void> {
  const { root, params, me } = context;
  loading(root, 'memory');
  const owner = isOwner(me);
  const [agents, people] = await Promise.all([listAgents(true), owner ? api<{ people: PersonWithIdentities[] }>('GET', '/api/people').then((answer) => answer.people) : Promise.resolve([])]);
  const names = new Map<string, string>([[me.id, me.name], ...people.map((person) => [person.id, person.name] as const)]);

  const person = owner ? (params.get('person') ?? '') : '';
  const validOn = params.get('validAt') ?? '';
  const believedOn = params.get('recordedAt') ?? '';
  const believed = dayAndTime(believedOn);
  const chooser = agentChooser(context, agents, '/memory', Object.fromEntries(Object.entries({ person, validAt: validOn, recordedAt: believedOn }).filter(([, value]) => value !== '')));
  if (chooser.chosen === null) {
    replace(root, empty(owner ? 'No agents yet: create one on the Agents page.' : 'No agent remembers anything about you yet.'));
    return;
  }
  const agent = chooser.chosen;

  const personPicker = select('person', [['', 'Everyone'], ...people.map((candidate) => [candidate.name, candidate.name] as const)], person);
  const validInput = h('input', { type: 'date', name: 'validAt', value: validOn });
  const believedInput = h('input', { type: 'date', name: 'recordedAt', value: believed.day });
  const believedTime = h('input', { type: 'time', name: 'recordedTime', step: '1', value: believed.time });
  const filters = h(
    'form',
    { class: 'filters', 'aria-label': 'Which memory' },
    owner ? field('Person', personPicker) : null,
    field('What was true on', validInput, 'Valid time: facts that held on that day.'),
    field('What did it believe on', believedInput, 'Record time: what the agent believed at the end of that day…'),
    field('At', believedTime, '…or at that time of the day (leave empty for its end).'),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Show'), h('a', { class: 'button plain', href: `/memory?agent=${encodeURIComponent(agent)}` }, 'Now')),
  );
  filters.addEventListener('submit', (event) => {
    event.preventDefault();
    const recordedAt = believedInput.value === '' ? '' : believedTime.value === '' ? believedInput.value : `${believedInput.value}T${believedTime.value}`;
    context.navigate(withQuery('/memory', { agent, person: owner ? personPicker.value : '', validAt: validInput.value, recordedAt }));
  });

  const view: MemoryView = {
    context,
    agent,
    person,
    names,
    past: validOn !== '' || believedOn !== '',
    reload: () => context.navigate(location.pathname + location.search, true),
  };

  const result = h('div', { class: 'memory' });
  replace(root, chooser.element, filters, result);
  const validAt = validOn === '' ? null : endOfDay(validOn);
  const recordedAt = believedOn === '' ? null : moment(believedOn);
  let groups: FactGroup[];
  try {
    ({ groups } = await api<{ groups: FactGroup[] }>('GET', withQuery(`/api/agents/${segment(agent)}/memory`, { person, validAt, recordedAt })));
  } catch (error) {
    replace(result, h('p', { class: 'outcome error', role: 'alert' }, errorText(error)));
    return;
  }
  const when = view.past
    ? h('p', { class: 'when' }, validAt === null ? null : ['What was true on ', time(validAt)], validAt !== null && recordedAt !== null ? ', ' : null, recordedAt === null ? null : ['as believed on ', time(recordedAt)], '.')
    : null;
  const total = groups.reduce((sum, group) => sum + group.facts.length + group.tombstones.length, 0);
  if (total === 0) {
    replace(result, when, empty(`${agent} remembers nothing here${view.past ? ' at that time' : ' yet'}. Tell it “remember that …” in the chat.`));
    return;
  }
  replace(
    result,
    when,
    groups
      .filter((group) => group.facts.length > 0 || group.tombstones.length > 0)
      .map((group) => {
        const title = group.person === null ? 'Agent-wide (for everyone)' : `About ${group.person.name}`;
        const headingId = `group-${group.person?.id ?? 'agent'}`;
        return h(
          'section',
          { class: 'group', 'aria-labelledby': headingId },
          h('h2', { id: headingId }, title),
          byTrust(group.facts).map(([trust, facts]) =>
            h('section', { class: 'trust', 'data-trust': trust }, trustHeading(trust, facts.length), h('ul', { class: 'cards' }, facts.map((fact) => factCard(view, fact)))),
          ),
          group.tombstones.length === 0 ? null : forgottenSection(view, group.tombstones),
        );
      }),
  );
}
