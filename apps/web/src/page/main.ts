import './style.css';
import { api, ApiError, onSignedOut, setCsrfToken, type Me, type Person } from './api.ts';
import { h, replace } from './dom.ts';
import { accountPage } from './pages/account.ts';
import { agentsPage } from './pages/agents.ts';
import { auditPage } from './pages/audit.ts';
import { channelsPage } from './pages/channels.ts';
import { chatPage } from './pages/chat.ts';
import { lessonsPage } from './pages/lessons.ts';
import { loginPage } from './pages/login.ts';
import { memoryPage } from './pages/memory.ts';
import { mirrorPage } from './pages/mirror.ts';
import { peoplePage } from './pages/people.ts';
import { errorText, isOwner, type PageContext } from './ui.ts';

interface Route {
  path: string;
  title: string;
  /** Shown to an owner only (members chat and see their own memory). */
  ownerOnly: boolean;
  render(context: PageContext): Promise<void> | void;
}

const routes: Route[] = [
  { path: '/agents', title: 'Agents', ownerOnly: true, render: agentsPage },
  { path: '/chat', title: 'Chat', ownerOnly: false, render: chatPage },
  { path: '/memory', title: 'Memory', ownerOnly: false, render: memoryPage },
  { path: '/lessons', title: 'Lessons & approvals', ownerOnly: true, render: lessonsPage },
  { path: '/mirror', title: 'Mirror', ownerOnly: true, render: mirrorPage },
  { path: '/people', title: 'People', ownerOnly: true, render: peoplePage },
  { path: '/channels', title: 'Channels', ownerOnly: true, render: channelsPage },
  { path: '/audit', title: 'Audit', ownerOnly: true, render: auditPage },
  { path: '/account', title: 'Account', ownerOnly: false, render: accountPage },
];

const app = document.getElementById('app')!;
/** What an action did ("Scout was created."): said to screen readers and shown, until the next page. */
const status = h('div', { class: 'flash', role: 'status', 'aria-live': 'polite' });
let me: Person | null = null;
/** Each render gets a number; a page that finishes loading after the next navigation does not draw. */
let renderCount = 0;

function homeFor(person: Person): string {
  return isOwner(person) ? '/agents' : '/chat';
}

function navigate(path: string, replaceEntry = false): void {
  // Going elsewhere ends the last confirmation; a page redrawn in place (after a change) keeps it.
  if (path !== location.pathname + location.search) status.textContent = '';
  if (replaceEntry) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  void render(true);
}

function announce(text: string): void {
  status.textContent = '';
  // A fresh text node each time, so a screen reader repeats the same sentence.
  setTimeout(() => {
    status.textContent = text;
  }, 50);
}

function navigation(person: Person, current: string): HTMLElement {
  const visible = routes.filter((route) => !route.ownerOnly || isOwner(person));
  return h(
    'nav',
    { 'aria-label': 'Main' },
    h(
      'ul',
      null,
      visible.map((route) => h('li', null, h('a', { href: route.path, 'aria-current': route.path === current ? 'page' : null }, route.title))),
      // Bull Board is a page of its own (the job queues), the owner's.
      isOwner(person) ? h('li', null, h('a', { href: '/admin/queues' }, 'Queues')) : null,
    ),
  );
}

function header(person: Person | null, current: string): HTMLElement {
  const signOut = h('button', { type: 'button', class: 'plain' }, 'Sign out');
  signOut.addEventListener('click', async () => {
    signOut.disabled = true;
    try {
      await api('POST', '/api/logout');
    } catch {
      // Signed out already, or the server is gone: the page forgets the session either way.
    }
    me = null;
    setCsrfToken(null);
    // Said plainly, with the way back in; not the sign-in link's page, which would ask for a code nobody was given.
    history.replaceState(null, '', '/login');
    signedOutPage('/login', 'signed-out');
    app.querySelector<HTMLElement>('main h1')?.focus();
  });
  return h(
    'header',
    { class: 'top' },
    h('a', { class: 'brand', href: person === null ? '/login' : homeFor(person) }, 'Roster'),
    person === null ? null : navigation(person, current),
    person === null ? null : h('div', { class: 'who' }, h('span', null, `${person.name} (${person.role})`), signOut),
  );
}

function layout(person: Person | null, current: string, title: string): HTMLElement {
  const root = h('div', { class: 'content' });
  const heading = h('h1', { tabindex: '-1' }, title);
  replace(
    app,
    h('a', { class: 'skip', href: '#main' }, 'Skip to content'),
    header(person, current),
    h('main', { id: 'main', tabindex: '-1' }, heading, root),
    status,
  );
  document.title = `${title} · Roster`;
  return root;
}

/** The session, asked once per load (and again after a sign-in). */
async function session(): Promise<Person | null> {
  if (me !== null) return me;
  try {
    const answer = await api<Me>('GET', '/api/me');
    setCsrfToken(answer.csrfToken);
    me = answer.person;
    return me;
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return null;
    throw error;
  }
}

/** The page without a session: after Sign out, or when the session ended (or never was), with how to sign in again. */
function signedOutPage(current: string, reason: 'signed-out' | 'no-session' = 'no-session'): void {
  const root = layout(null, current, reason === 'signed-out' ? 'Signed out' : 'Sign in');
  replace(
    root,
    h('p', { role: 'status' }, reason === 'signed-out' ? 'You are signed out. To sign in again:' : 'You are not signed in, or your session ended.'),
    h('p', null, 'On the machine that runs Roster, run ', h('code', null, 'npx roster login-link'), ' and open the link it prints. A link works once, for 15 minutes.'),
  );
}

async function render(moveFocus: boolean): Promise<void> {
  const count = (renderCount += 1);
  const path = location.pathname.replace(/\/+$/, '') || '/';
  if (path === '/login') {
    const root = layout(null, path, 'Sign in');
    await loginPage(root, (person, csrfToken) => {
      me = person;
      setCsrfToken(csrfToken);
      navigate(homeFor(person), true);
    });
    return;
  }
  let person: Person | null;
  try {
    person = await session();
  } catch (error) {
    const root = layout(null, path, 'Roster');
    replace(root, h('p', { class: 'outcome error', role: 'alert' }, errorText(error)));
    return;
  }
  if (count !== renderCount) return;
  if (person === null) {
    signedOutPage(path);
    return;
  }
  const route = routes.find((candidate) => candidate.path === path);
  if (route === undefined || (route.ownerOnly && !isOwner(person))) {
    if (path === '/' || route !== undefined) {
      navigate(homeFor(person), true);
      return;
    }
    const root = layout(person, path, 'Not found');
    replace(root, h('p', null, 'There is no such page. Choose one above.'));
    return;
  }
  const root = layout(person, path, route.title);
  if (moveFocus) app.querySelector<HTMLElement>('main h1')?.focus();
  const context: PageContext = {
    me: person,
    params: new URLSearchParams(location.search),
    root,
    navigate,
    announce,
  };
  try {
    await route.render(context);
  } catch (error) {
    if (count === renderCount) replace(root, h('p', { class: 'outcome error', role: 'alert' }, errorText(error)));
  }
}

// Links inside the app change the page without reloading it.
document.addEventListener('click', (event) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const link = (event.target as Element | null)?.closest?.('a');
  if (link === null || link === undefined || link.target !== '' || link.hasAttribute('download')) return;
  const url = new URL(link.href, location.href);
  if (url.origin !== location.origin || url.pathname.startsWith('/api/') || url.pathname.startsWith('/admin/') || url.hash !== '' && url.pathname === location.pathname) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
});

window.addEventListener('popstate', () => void render(true));

onSignedOut(() => {
  me = null;
  setCsrfToken(null);
  signedOutPage(location.pathname);
});

void render(false);
