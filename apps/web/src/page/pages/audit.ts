import { api, withQuery, type AuditEvent, type ChainReport } from '../api.ts';
import { field, h, replace, select, time } from '../dom.ts';
import { action, badge, empty, errorText, listAgents, loading, outcome, type PageContext } from '../ui.ts';

function detailText(detail: Record<string, unknown>): string {
  if (Object.keys(detail).length === 0) return '';
  return Object.entries(detail)
    .map(([key, value]) => `${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(', ');
}

export async function auditPage(context: PageContext): Promise<void> {
  const { root, params } = context;
  loading(root, 'the audit');
  const agents = await listAgents(true);
  const agent = params.get('agent') ?? '';
  const actionFilter = params.get('action') ?? '';
  const limit = params.get('limit') ?? '100';

  const agentPicker = select('agent', [['', 'Every agent'], ...agents.map((candidate) => [candidate.name, candidate.name] as const)], agent);
  const actionInput = h('input', { type: 'text', name: 'action', value: actionFilter, autocomplete: 'off', spellcheck: 'false', placeholder: 'forget' });
  const limitInput = h('input', { type: 'number', name: 'limit', min: '1', max: '1000', value: limit, inputmode: 'numeric' });
  const filters = h(
    'form',
    { class: 'filters', 'aria-label': 'Filter events' },
    field('Agent', agentPicker),
    field('Action', actionInput),
    field('At most', limitInput),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Filter')),
  );
  filters.addEventListener('submit', (event) => {
    event.preventDefault();
    context.navigate(withQuery('/audit', { agent: agentPicker.value, action: actionInput.value.trim(), limit: limitInput.value }));
  });

  const verification = outcome();
  const chains = h('div', { class: 'chains' });
  const verify = action('Verify chain', async () => {
    verification.clear();
    replace(chains);
    try {
      const answer = await api<{ chains: ChainReport[] }>('POST', '/api/audit/verify', agent === '' ? {} : { agent });
      const broken = answer.chains.filter((chain) => !chain.ok);
      if (broken.length === 0) verification.say(`Every chain holds: ${answer.chains.length} checked, ${answer.chains.reduce((sum, chain) => sum + chain.events, 0)} events.`);
      else verification.fail(`${broken.length} of ${answer.chains.length} chains are broken.`);
      replace(
        chains,
        h(
          'ul',
          { class: 'cards' },
          answer.chains.map((chain) =>
            h(
              'li',
              { class: 'card' },
              h('div', { class: 'card-head' }, h('h3', null, chain.agent), badge(chain.ok ? 'ok' : 'broken')),
              h('p', null, `${chain.events} events`, chain.broken === null ? '' : `; first broken link: #${chain.broken.seq} (${chain.broken.problem})`),
            ),
          ),
        ),
      );
    } catch (error) {
      verification.fail(error);
    }
  }, { kind: 'primary' });

  const table = h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Events' });
  replace(
    root,
    filters,
    h('section', { 'aria-labelledby': 'verify' }, h('h2', { id: 'verify' }, 'Chain'), h('p', { class: 'hint' }, 'Every change of memory appends one event to its agent’s hash chain; verifying recomputes it and names the first broken link.'), h('div', { class: 'actions' }, verify), verification.element, chains),
    h('section', { 'aria-labelledby': 'events' }, h('h2', { id: 'events' }, 'Events'), table),
  );
  try {
    const { events } = await api<{ events: AuditEvent[] }>('GET', withQuery('/api/audit', { agent, action: actionFilter, limit }));
    if (events.length === 0) {
      replace(table, empty('No events match.'));
      return;
    }
    replace(
      table,
      h(
        'table',
        { class: 'events' },
        h('caption', { class: 'visually-hidden' }, 'Audit events, newest first'),
        h('thead', null, h('tr', null, ['When', 'Agent', 'Action', 'Actor', 'Target', 'Detail'].map((name) => h('th', { scope: 'col' }, name)))),
        h(
          'tbody',
          null,
          events.map((event) =>
            h(
              'tr',
              null,
              h('td', null, time(event.occurredAt)),
              h('td', null, event.agent),
              h('td', null, h('code', null, event.action)),
              h('td', null, event.actorKind),
              h('td', null, event.targetKind),
              h('td', { class: 'detail' }, detailText(event.detail)),
            ),
          ),
        ),
      ),
    );
  } catch (error) {
    replace(table, h('p', { class: 'outcome error', role: 'alert' }, errorText(error)));
  }
}
