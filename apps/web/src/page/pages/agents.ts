import { api, segment, type Agent, type EngineChoice, type EngineTest, type PurgeResult } from '../api.ts';
import { field, h, replace, select, time } from '../dom.ts';
import { action, badge, confirmStep, empty, form, listAgents, loading, outcome, text, type PageContext } from '../ui.ts';

const nameHint = 'A letter of any script, then letters, digits, - or _; unique whatever its case.';

/** The engine select and its test button, as one group. */
function enginePicker(engines: EngineChoice[], selected?: string): { element: HTMLElement; picker: HTMLSelectElement } {
  const choices = engines.map((engine) => [engine.reference, engine.configured ? engine.label : `${engine.label} (not configured)`] as const);
  if (selected !== undefined && !engines.some((engine) => engine.reference === selected)) choices.unshift([selected, selected]);
  const picker = select('engine', choices, selected);
  const detail = h('small', { class: 'hint' });
  const describe = (): void => {
    const engine = engines.find((candidate) => candidate.reference === picker.value);
    detail.textContent = engine?.detail ?? '';
  };
  picker.addEventListener('change', describe);
  describe();
  const report = outcome();
  const test = action('Test engine', async () => {
    report.clear();
    try {
      const answer = await api<EngineTest>('POST', '/api/engines/test', { engine: picker.value });
      if (answer.ok) report.say(`Works: ${answer.detail}`);
      else report.fail(`Does not work: ${answer.detail}`);
    } catch (error) {
      report.fail(error);
    }
  });
  const element = h('div', { class: 'engine' }, field('Engine', picker), detail, h('div', { class: 'actions' }, test), report.element);
  return { element, picker };
}

function nameInput(value = ''): HTMLInputElement {
  return h('input', { type: 'text', name: 'name', required: true, maxlength: '80', autocomplete: 'off', spellcheck: 'false', value });
}

function jobInput(value = ''): HTMLTextAreaElement {
  const job = h('textarea', { name: 'job', required: true, rows: '2', maxlength: '500' });
  job.value = value;
  return job;
}

export async function agentsPage(context: PageContext): Promise<void> {
  const { root } = context;
  loading(root, 'agents');
  const [agents, engines] = await Promise.all([listAgents(true), api<{ engines: EngineChoice[] }>('GET', '/api/engines').then((answer) => answer.engines)]);
  const reload = (): void => context.navigate('/agents', true);

  const list = h('ul', { class: 'cards', 'aria-label': 'Agents' });
  for (const agent of agents) list.appendChild(agentCard(context, agent, engines, reload));

  const engine = enginePicker(engines, engines.find((candidate) => candidate.configured)?.reference);
  const create = form({
    label: 'New agent',
    submit: 'Create agent',
    fields: [field('Name', nameInput(), nameHint), field('Job', jobInput(), 'One sentence: what this agent does for you.'), engine.element],
    async run(data, report) {
      const name = text(data, 'name');
      await api<Agent>('POST', '/api/agents', { name, job: text(data, 'job'), engine: engine.picker.value });
      context.announce(`${name} was created.`);
      report.say(`${name} was created.`);
      reload();
    },
  });

  replace(
    root,
    h('section', { 'aria-labelledby': 'agents-list' }, h('h2', { id: 'agents-list' }, 'Your agents'), agents.length === 0 ? empty('No agents yet: create the first one below.') : list),
    h('section', { 'aria-labelledby': 'agents-new' }, h('h2', { id: 'agents-new' }, 'New agent'), create),
  );
}

function agentCard(context: PageContext, agent: Agent, engines: EngineChoice[], reload: () => void): HTMLElement {
  const card = h('li', { class: 'card', 'data-agent': agent.name });
  const report = outcome();
  const path = `/api/agents/${segment(agent.name)}`;

  /** Run one step on the agent, then show the list as it now is. */
  const step = (verb: 'archive' | 'restore', done: string) => async (): Promise<void> => {
    try {
      await api('POST', `${path}/${verb}`);
      context.announce(`${agent.name} ${done}.`);
      reload();
    } catch (error) {
      report.fail(error);
    }
  };

  const purge = async (): Promise<void> => {
    const confirmed = await confirmStep({
      title: `Purge ${agent.name}?`,
      body: [
        h('p', null, `Purging forgets ${agent.name} and everything it remembers, for everyone. It cannot be undone; the audit keeps that it happened.`),
        h('p', null, 'Restoring instead makes it active again, with its memory.'),
      ],
      confirm: `Purge ${agent.name}`,
      typeToConfirm: agent.name,
    });
    if (!confirmed) return;
    try {
      const result = await api<PurgeResult>('POST', `${path}/purge`, { confirm: agent.name });
      context.announce(`${agent.name} was purged; ${result.facts} ${result.facts === 1 ? 'fact' : 'facts'} forgotten.`);
      reload();
    } catch (error) {
      report.fail(error);
    }
  };

  const show = (): void => {
    const active = agent.status === 'active';
    const buttons = [
      active ? h('a', { class: 'button plain', href: `/chat?agent=${encodeURIComponent(agent.name)}` }, 'Chat', h('span', { class: 'visually-hidden' }, ` with ${agent.name}`)) : null,
      h('a', { class: 'button plain', href: `/memory?agent=${encodeURIComponent(agent.name)}` }, 'Memory', h('span', { class: 'visually-hidden' }, ` of ${agent.name}`)),
      action(`Edit ${agent.name}`, () => edit()),
      active ? action(`Archive ${agent.name}`, step('archive', 'was archived')) : action(`Restore ${agent.name}`, step('restore', 'was restored')),
      // Only an archived agent can be purged: archiving first is the pause before forgetting for good.
      agent.status === 'archived' ? action(`Purge ${agent.name}…`, purge, { kind: 'danger' }) : null,
    ];
    replace(
      card,
      h('div', { class: 'card-head' }, h('h3', null, agent.name), badge(agent.status)),
      h('p', { class: 'job' }, agent.job),
      h('dl', { class: 'facts-inline' }, h('dt', null, 'Engine'), h('dd', null, h('code', null, agent.engine)), h('dt', null, 'Created'), h('dd', null, time(agent.createdAt))),
      agent.status === 'archived' ? h('p', { class: 'hint' }, 'Archived: it keeps its memory and answers nobody. Restore it to talk to it again, or purge it to forget it for good.') : null,
      h('div', { class: 'actions' }, buttons),
      report.element,
    );
  };

  const edit = (): void => {
    const engine = enginePicker(engines, agent.engine);
    const cancel = action('Cancel', () => show());
    const editor = form({
      label: `Edit ${agent.name}`,
      submit: 'Save',
      fields: [field('Name', nameInput(agent.name), nameHint), field('Job', jobInput(agent.job)), engine.element],
      async run(data, result) {
        const change: Record<string, string> = {};
        const name = text(data, 'name');
        const job = text(data, 'job');
        if (name !== agent.name) change.name = name;
        if (job !== agent.job) change.job = job;
        if (engine.picker.value !== agent.engine) change.engine = engine.picker.value;
        if (Object.keys(change).length === 0) {
          result.say('Nothing changed.');
          return;
        }
        await api('PATCH', path, change);
        context.announce(`${name} was saved.`);
        reload();
      },
    });
    editor.querySelector('.actions')?.appendChild(cancel);
    replace(card, h('h3', null, `Edit ${agent.name}`), editor);
    editor.querySelector<HTMLInputElement>('input[name=name]')?.focus();
  };

  show();
  return card;
}
