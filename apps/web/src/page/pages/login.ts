import { api, type Me, type Person } from '../api.ts';
import { h, replace } from '../dom.ts';
import { errorText } from '../ui.ts';

/**
 * `/login#TOKEN`: the one-time link `roster login-link` prints. The token
 * rides in the fragment, which no server log or Referer sees; the page drops
 * it from the address bar at once and trades it for a session cookie.
 */
export async function loginPage(root: HTMLElement, signedIn: (person: Person, csrfToken: string | null) => void): Promise<void> {
  let token = location.hash.replace(/^#/, '').trim();
  try {
    token = decodeURIComponent(token);
  } catch {
    // Not percent-encoded after all: the token as it stands.
  }
  history.replaceState(null, '', '/login');
  const howTo = h('p', null, 'On the machine that runs Roster, run ', h('code', null, 'npx roster login-link'), ' and open the link it prints. A link works once, for 15 minutes.');
  if (token === '') {
    replace(root, h('p', null, 'This address needs the sign-in link’s code after the #.'), howTo);
    return;
  }
  replace(root, h('p', { class: 'loading', 'aria-busy': 'true', role: 'status' }, 'Signing in…'));
  try {
    const answer = await api<Me>('POST', '/api/login', { token });
    signedIn(answer.person, answer.csrfToken);
  } catch (error) {
    replace(root, h('p', { class: 'outcome error', role: 'alert' }, `Could not sign in: ${errorText(error)}`), howTo);
  }
}
