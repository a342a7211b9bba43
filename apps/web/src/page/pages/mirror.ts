import { api, segment, type MirrorCase, type MirrorReport } from '../api.ts';
import { passRateChart } from '../chart.ts';
import { h, replace, time } from '../dom.ts';
import { agentChooser, badge, empty, errorText, listAgents, loading, type PageContext } from '../ui.ts';

function caseCard(item: MirrorCase): HTMLElement {
  const history = item.history ?? [];
  return h(
    'li',
    { class: 'card mirror-case', 'data-case': item.id },
    h('div', { class: 'card-head' }, badge(item.status), h('span', { class: 'tag' }, `streak ${item.streak}`), h('span', { class: 'tag' }, `${history.length || item.runs} ${(history.length || item.runs) === 1 ? 'run' : 'runs'}`)),
    h('blockquote', null, item.text),
    h('p', { class: 'hint' }, 'Last replayed ', time(item.lastRunAt, 'never'), item.graduatedAt === null ? null : ['; graduated ', time(item.graduatedAt)], '.'),
    history.length === 0
      ? null
      : h(
          'details',
          null,
          h('summary', null, 'Runs'),
          h(
            'ol',
            { class: 'runs' },
            history.map((run) => h('li', null, badge(run.verdict), ' ', time(run.ranAt), run.reason === '' ? null : h('span', { class: 'hint' }, ` — ${run.reason}`))),
          ),
        ),
  );
}

export async function mirrorPage(context: PageContext): Promise<void> {
  const { root } = context;
  loading(root, 'agents');
  const agents = await listAgents(true);
  const chooser = agentChooser(context, agents, '/mirror');
  if (chooser.chosen === null) {
    replace(root, empty('No agents yet.'));
    return;
  }
  const body = h('div', { class: 'loading' }, 'Loading the mirror…');
  replace(root, chooser.element, body);
  let report: MirrorReport;
  try {
    report = await api<MirrorReport>('GET', `/api/agents/${segment(chooser.chosen)}/mirror`);
  } catch (error) {
    replace(body, h('p', { class: 'outcome error', role: 'alert' }, errorText(error)));
    return;
  }
  body.className = 'mirror';
  replace(
    body,
    h('p', { class: 'headline' }, h('strong', null, `${report.learned} of ${report.total}`), ' corrections no longer repeated'),
    report.judged ? null : h('p', { class: 'outcome error' }, report.summary),
    h('p', { class: 'hint' }, 'Each correction becomes a case, replayed at night with the agent’s lessons; five passes in a row and it graduates.'),
    h('section', { 'aria-labelledby': 'pass-rate' }, h('h2', { id: 'pass-rate' }, 'Pass rate'), passRateChart(report.passRate ?? [])),
    h(
      'section',
      { 'aria-labelledby': 'cases' },
      h('h2', { id: 'cases' }, `Cases (${report.cases.length})`),
      report.cases.length === 0 ? empty('No corrections yet: when someone says “that’s wrong…”, it becomes a case.') : h('ul', { class: 'cards' }, report.cases.map(caseCard)),
    ),
  );
}
