import { api, segment, type Approval, type Evidence, type Lesson, type PersonWithIdentities } from '../api.ts';
import { field, h, replace, time } from '../dom.ts';
import { action, agentChooser, badge, empty, errorText, form, listAgents, loading, outcome, text, type PageContext } from '../ui.ts';

function proposer(approval: Approval, names: Map<string, string>): string {
  if (approval.proposedByKind === 'job') return `the ${approval.proposedBy ?? 'review'} job`;
  if (approval.proposedByKind === 'agent') return `the agent ${approval.agent}`;
  return approval.proposedBy === null ? 'a person' : (names.get(approval.proposedBy) ?? approval.proposedBy);
}

/** One piece of evidence: whose statement, where and when it was said, and the words (a tombstone once forgotten). */
function evidenceItem(item: Evidence, names: Map<string, string>): HTMLElement {
  const who = item.person ?? (item.personId === null ? null : (names.get(item.personId) ?? 'a person'));
  const said = item.message;
  return h(
    'li',
    { class: 'evidence-item', 'data-kind': item.kind },
    h(
      'p',
      { class: 'said-where' },
      badge(item.kind),
      ' ',
      item.kind === 'note' ? 'the agent’s note' : who === null ? 'from the agent' : ['said by ', h('strong', null, who)],
      said === null ? null : [said.channel === null ? null : [' on ', h('span', { class: 'tag channel' }, said.channel)], ', ', time(said.at)],
    ),
    item.text === undefined ? null : h('q', { class: 'note' }, item.text),
    said === null
      ? h('p', { class: 'hint' }, 'The message it came from is no longer kept.')
      : said.forgotten || said.text === null
        ? h('p', { class: 'tombstone' }, 'Forgotten: its words are erased.')
        : h('blockquote', { class: 'said' }, item.kind === 'note' ? [h('small', { class: 'hint' }, 'in answer to: '), said.text] : said.text),
    item.paraphrased === true ? h('small', { class: 'hint' }, 'The lesson paraphrases several people.') : null,
  );
}

function evidenceList(evidence: Evidence[], names: Map<string, string>, open: boolean): HTMLElement {
  return h(
    'details',
    { class: 'evidence-box', open: open && evidence.length > 0 && evidence.length <= 3 },
    h('summary', null, `Evidence (${evidence.length})`),
    evidence.length === 0 ? empty('No evidence was attached.') : h('ul', { class: 'evidence' }, evidence.map((item) => evidenceItem(item, names))),
  );
}

function approvalCard(context: PageContext, approval: Approval, names: Map<string, string>): HTMLElement {
  const report = outcome();
  const decide = (verb: 'approve' | 'reject') => async (): Promise<void> => {
    try {
      await api('POST', `/api/approvals/${segment(approval.id)}/${verb}`);
      context.announce(verb === 'approve' ? 'The lesson was approved.' : 'The lesson was rejected.');
      context.navigate(location.pathname + location.search, true);
    } catch (error) {
      report.fail(error);
    }
  };
  return h(
    'li',
    { class: 'card approval', 'data-approval': approval.id },
    h('div', { class: 'card-head' }, h('h3', null, `For ${approval.agent}`), badge(approval.status)),
    h('blockquote', { class: 'lesson-text' }, approval.text),
    h('p', { class: 'hint' }, 'Proposed by ', proposer(approval, names), ', ', time(approval.createdAt), '. Once approved, this text rides in every later prompt of ', approval.agent, '.'),
    evidenceList(approval.evidence ?? [], names, true),
    approval.status === 'pending'
      ? h('div', { class: 'actions' }, action('Approve', decide('approve'), { kind: 'primary' }), action('Reject', decide('reject'), { kind: 'danger' }))
      : null,
    report.element,
  );
}

function lessonCard(context: PageContext, lesson: Lesson, names: Map<string, string>): HTMLElement {
  const card = h('li', { class: `card lesson ${lesson.status}`, 'data-lesson': lesson.id });
  const retire = (): void => {
    const reason = h('textarea', { name: 'reason', rows: '2', required: true, maxlength: '500' });
    const retireForm = form({
      label: 'Retire the lesson',
      submit: 'Retire',
      kind: 'danger',
      fields: [field('Why it no longer holds', reason, 'A retired text is never proposed or approved again.')],
      async run(data) {
        await api('POST', `/api/lessons/${segment(lesson.id)}/retire`, { reason: text(data, 'reason') });
        context.announce('The lesson was retired.');
        context.navigate(location.pathname + location.search, true);
      },
    });
    card.appendChild(retireForm);
    reason.focus();
  };
  replace(
    card,
    h('div', { class: 'card-head' }, badge(lesson.status), h('span', { class: 'tag version' }, `version ${lesson.version}`)),
    h('blockquote', { class: 'lesson-text' }, lesson.text),
    h('p', { class: 'approval-line' }, 'Approved by ', h('strong', { class: 'approver' }, lesson.approver.name), ', ', time(lesson.approvedAt), '.'),
    lesson.retiredAt === null ? null : h('p', { class: 'hint' }, 'Retired ', time(lesson.retiredAt), lesson.retiredReason === null ? '.' : [': ', h('q', null, lesson.retiredReason)]),
    evidenceList(lesson.evidence, names, false),
    lesson.status === 'active' ? h('div', { class: 'actions' }, action('Retire…', () => retire())) : null,
  );
  return card;
}

export async function lessonsPage(context: PageContext): Promise<void> {
  const { root } = context;
  loading(root, 'lessons');
  const [agents, approvals, people] = await Promise.all([
    listAgents(true),
    api<{ approvals: Approval[] }>('GET', '/api/approvals?status=pending').then((answer) => answer.approvals),
    api<{ people: PersonWithIdentities[] }>('GET', '/api/people').then((answer) => answer.people),
  ]);
  const names = new Map(people.map((person) => [person.id, person.name] as const));

  const pending = h(
    'section',
    { 'aria-labelledby': 'pending' },
    h('h2', { id: 'pending' }, `Waiting for approval (${approvals.length})`),
    approvals.length === 0
      ? empty('Nothing waits for approval. Lessons come from an agent’s proposal or from the nightly review of repeated corrections.')
      : h('ul', { class: 'cards' }, approvals.map((approval) => approvalCard(context, approval, names))),
  );

  const chooser = agentChooser(context, agents, '/lessons');
  const lessonsBox = h('div');
  replace(root, pending, h('section', { 'aria-labelledby': 'lessons' }, h('h2', { id: 'lessons' }, 'Lessons'), chooser.element, lessonsBox));
  if (chooser.chosen === null) {
    replace(lessonsBox, empty('No agents yet.'));
    return;
  }
  try {
    const { lessons } = await api<{ lessons: Lesson[] }>('GET', `/api/agents/${segment(chooser.chosen)}/lessons`);
    const active = lessons.filter((lesson) => lesson.status === 'active');
    const retired = lessons.filter((lesson) => lesson.status !== 'active');
    replace(
      lessonsBox,
      h('h3', null, `Active (${active.length})`),
      active.length === 0 ? empty(`${chooser.chosen} follows no lesson yet.`) : h('ul', { class: 'cards', 'aria-label': 'Active lessons' }, active.map((lesson) => lessonCard(context, lesson, names))),
      h('h3', null, `Retired (${retired.length})`),
      retired.length === 0 ? empty('None retired.') : h('ul', { class: 'cards', 'aria-label': 'Retired lessons' }, retired.map((lesson) => lessonCard(context, lesson, names))),
    );
  } catch (error) {
    replace(lessonsBox, h('p', { class: 'outcome error', role: 'alert' }, errorText(error)));
  }
}
