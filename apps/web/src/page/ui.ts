import { api, ApiError, type Agent, type Person } from './api.ts';
import { field, h, replace, select, type Child } from './dom.ts';

/** What every page is given. */
export interface PageContext {
  /** Who is signed in. */
  me: Person;
  /** The page's query (`/memory?agent=Scout`). */
  params: URLSearchParams;
  /** The page's content area, under its heading. */
  root: HTMLElement;
  /** Go to another page of the app. */
  navigate(path: string, replaceEntry?: boolean): void;
  /** Say something to the person (and to a screen reader) without moving focus. */
  announce(text: string): void;
}

export function isOwner(me: Person): boolean {
  return me.role === 'owner';
}

/** A sentence for an error, as the API said it. */
export function errorText(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof Error) return error.message;
  return String(error);
}

/** A box that shows the outcome of an action: text, or an alert for a failure. */
export function outcome(): { element: HTMLElement; say(text: string): void; fail(error: unknown): void; clear(): void } {
  const element = h('p', { class: 'outcome', role: 'status', 'aria-live': 'polite' });
  return {
    element,
    say(text) {
      element.className = 'outcome ok';
      element.setAttribute('role', 'status');
      replace(element, text);
    },
    fail(error) {
      element.className = 'outcome error';
      element.setAttribute('role', 'alert');
      replace(element, errorText(error));
    },
    clear() {
      element.className = 'outcome';
      replace(element);
    },
  };
}

export function loading(root: HTMLElement, what: string): void {
  replace(root, h('p', { class: 'loading', 'aria-busy': 'true' }, `Loading ${what}…`));
}

/** A button that runs an action, disabled while the action runs. */
export function action(label: string, run: (button: HTMLButtonElement) => Promise<unknown> | unknown, options: { kind?: 'primary' | 'danger' | 'plain' } = {}): HTMLButtonElement {
  const button = h('button', { type: 'button', class: options.kind ?? 'plain' }, label);
  button.addEventListener('click', async (event) => {
    event.preventDefault();
    if (button.disabled) return;
    button.disabled = true;
    try {
      await run(button);
    } finally {
      if (button.isConnected) button.disabled = false;
    }
  });
  return button;
}

/**
 * A form whose submit runs an action while its button is disabled; the
 * outcome shows under it. The browser's own validation (required, maxlength)
 * runs first.
 */
export function form(props: { label: string; submit: string; kind?: 'primary' | 'danger' | 'plain'; fields: Child[]; run: (data: FormData, report: ReturnType<typeof outcome>) => Promise<void> }): HTMLFormElement {
  const report = outcome();
  const button = h('button', { type: 'submit', class: props.kind ?? 'primary' }, props.submit);
  const element = h('form', { 'aria-label': props.label, class: 'stack' }, props.fields, h('div', { class: 'actions' }, button), report.element);
  element.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (button.disabled) return;
    button.disabled = true;
    report.clear();
    try {
      await props.run(new FormData(element), report);
    } catch (error) {
      report.fail(error);
    } finally {
      button.disabled = false;
    }
  });
  return element;
}

export function text(data: FormData, name: string): string {
  const value = data.get(name);
  return typeof value === 'string' ? value.trim() : '';
}

/**
 * Ask before an irreversible step, in a modal dialog (focus stays inside it,
 * Escape cancels). With `typeToConfirm`, the confirm button waits until that
 * exact text is typed.
 */
export function confirmStep(options: { title: string; body: Child; confirm: string; typeToConfirm?: string }): Promise<boolean> {
  return new Promise((resolve) => {
    const typed = h('input', { type: 'text', name: 'confirm', autocomplete: 'off', spellcheck: 'false' });
    const yes = h('button', { type: 'submit', class: 'danger', disabled: options.typeToConfirm !== undefined }, options.confirm);
    const no = h('button', { type: 'button', class: 'plain' }, 'Cancel');
    const titleId = `dialog-title-${Math.random().toString(36).slice(2)}`;
    const dialog = h(
      'dialog',
      { 'aria-labelledby': titleId },
      h(
        'form',
        { method: 'dialog', class: 'stack' },
        h('h2', { id: titleId }, options.title),
        h('div', null, options.body),
        options.typeToConfirm === undefined ? null : field(`Type ${options.typeToConfirm} to confirm`, typed),
        h('div', { class: 'actions' }, yes, no),
      ),
    );
    typed.addEventListener('input', () => {
      yes.disabled = typed.value !== options.typeToConfirm;
    });
    let answer = false;
    yes.addEventListener('click', () => {
      answer = options.typeToConfirm === undefined || typed.value === options.typeToConfirm;
    });
    no.addEventListener('click', () => dialog.close());
    dialog.addEventListener('close', () => {
      dialog.remove();
      resolve(answer);
    });
    document.body.appendChild(dialog);
    dialog.showModal();
    (options.typeToConfirm === undefined ? no : typed).focus();
  });
}

/** The wallet's agents; a member who may not list them gets none. */
export async function listAgents(all = false): Promise<Agent[]> {
  try {
    return (await api<{ agents: Agent[] }>('GET', all ? '/api/agents?all=true' : '/api/agents')).agents;
  } catch (error) {
    if (error instanceof ApiError && error.status === 403) return [];
    throw error;
  }
}

/**
 * The choice of agent at the top of a page; changing it reloads the page
 * with `?agent=NAME`. Returns the agent chosen (the one asked for, else the first).
 */
const lastAgentKey = 'roster.last-agent';

/** The agent this browser last chatted with or chose, if the storage can be read. */
function lastAgent(): string | null {
  try {
    return localStorage.getItem(lastAgentKey);
  } catch {
    return null;
  }
}

/** Remember the agent just used, so the next page that picks an agent opens on it. */
export function rememberAgent(name: string): void {
  try {
    localStorage.setItem(lastAgentKey, name);
  } catch {
    // Storage refused (a private window's quota): the pages open on the first agent instead.
  }
}

export function agentChooser(context: PageContext, agents: Agent[], path: string, extra: Record<string, string> = {}): { element: HTMLElement; chosen: string | null } {
  const known = (name: string | null): name is string => name !== null && agents.some((agent) => agent.name === name);
  const asked = context.params.get('agent');
  const recent = lastAgent();
  // The agent in the address; else the one last used here; else the first active one.
  const chosen = known(asked) ? asked : known(recent) ? recent : (agents.find((agent) => agent.status === 'active')?.name ?? agents[0]?.name ?? null);
  if (chosen !== null) rememberAgent(chosen);
  const picker = select(
    'agent',
    agents.map((agent) => [agent.name, agent.status === 'active' ? agent.name : `${agent.name} (${agent.status})`] as const),
    chosen ?? undefined,
  );
  picker.addEventListener('change', () => {
    const query = new URLSearchParams({ ...extra, agent: picker.value });
    context.navigate(`${path}?${query.toString()}`);
  });
  return { element: h('div', { class: 'chooser' }, field('Agent', picker)), chosen };
}

/** A line that says there is nothing here yet, and what would put something here. */
export function empty(text: string): HTMLElement {
  return h('p', { class: 'empty' }, text);
}

/** A short badge: trust, status, verdict. */
export function badge(value: string): HTMLElement {
  return h('span', { class: `badge badge-${value.replace(/[^a-z-]/gi, '')}` }, value);
}
