import { api, segment, type ApiToken } from '../api.ts';
import { field, h, replace, time } from '../dom.ts';
import { action, confirmStep, empty, form, loading, outcome, text, type PageContext } from '../ui.ts';

function tokenRow(context: PageContext, token: ApiToken): HTMLElement {
  const report = outcome();
  return h(
    'tr',
    { 'data-token': token.name },
    h('th', { scope: 'row' }, token.name),
    h('td', null, time(token.createdAt)),
    h('td', null, time(token.lastUsedAt, 'never')),
    h('td', null, time(token.expiresAt, 'no end')),
    h(
      'td',
      null,
      action(
        `Revoke ${token.name}`,
        async () => {
          const sure = await confirmStep({ title: `Revoke “${token.name}”?`, body: h('p', null, 'Scripts using it are refused from now on.'), confirm: 'Revoke' });
          if (!sure) return;
          try {
            await api('DELETE', `/api/tokens/${segment(token.id)}`);
            context.announce(`${token.name} was revoked.`);
            context.navigate('/account', true);
          } catch (error) {
            report.fail(error);
          }
        },
        { kind: 'danger' },
      ),
      report.element,
    ),
  );
}

/** The signed-in person's own settings: personal API tokens for scripts, and a copy of everything held about them. */
export async function accountPage(context: PageContext): Promise<void> {
  const { root, me } = context;
  loading(root, 'your tokens');
  const tokens = (await api<{ tokens: ApiToken[] }>('GET', '/api/tokens')).tokens;
  const shown = h('div', { class: 'new-token' });
  const body = h('tbody', null, tokens.length === 0 ? h('tr', { 'data-none': '' }, h('td', { colspan: '5' }, empty('No token yet.'))) : tokens.map((token) => tokenRow(context, token)));
  const nameInput = h('input', { type: 'text', name: 'name', required: true, maxlength: '80', autocomplete: 'off', placeholder: 'e.g. backup script' });
  const make = form({
    label: 'New API token',
    submit: 'Make token',
    fields: [field('Name', nameInput, 'What the token is for.')],
    async run(data, report) {
      const made = await api<ApiToken & { token: string }>('POST', '/api/tokens', { name: text(data, 'name') });
      report.say(`${made.name} was made. Copy it now: it is shown only this once.`);
      replace(
        shown,
        h('p', null, 'Your new token (send it as ', h('code', null, 'Authorization: Bearer …'), '):'),
        h('pre', { class: 'token', 'aria-label': `The token ${made.name}` }, made.token),
      );
      body.querySelector('[data-none]')?.remove();
      body.appendChild(tokenRow(context, made));
      // Ready for the next one: the name just used is not left to be sent twice.
      nameInput.value = '';
    },
  });
  const erased = outcome();
  replace(
    root,
    h('p', null, 'Signed in as ', h('strong', null, me.name), ` (${me.role}).`),
    h(
      'section',
      { 'aria-labelledby': 'tokens' },
      h('h2', { id: 'tokens' }, 'API tokens'),
      h('p', { class: 'hint' }, 'A token acts as you from scripts, with your rights. Roster keeps only its hash.'),
      h(
        'table',
        { 'aria-label': 'Your API tokens' },
        h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Made'), h('th', { scope: 'col' }, 'Last used'), h('th', { scope: 'col' }, 'Ends'), h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')))),
        body,
      ),
    ),
    h('section', { 'aria-labelledby': 'tokens-new' }, h('h2', { id: 'tokens-new' }, 'New token'), make, shown),
    h(
      'section',
      { 'aria-labelledby': 'your-data' },
      h('h2', { id: 'your-data' }, 'Your data'),
      h(
        'p',
        { class: 'hint' },
        'Everything Roster holds about you, as one JSON file: what each agent remembers about you with every version, your messages and the replies to them, your channel handles, what you taught, and your sessions and tokens (never the tokens themselves).',
      ),
      h('a', { class: 'button', href: '/api/me/export', download: `roster-export-${me.name}.json` }, 'Download my data'),
      h(
        'p',
        { class: 'hint' },
        'Erasing takes all of it out of Roster for good, with every agent: what they remember about you, your messages and the replies to them, your channel handles, what you taught, your sessions and tokens. A handle of yours that writes again is a stranger.',
      ),
      eraseAction(context, erased),
      erased.element,
    ),
  );
}

/** Erase everything about the signed-in person, behind typing their name; their session goes with it. */
function eraseAction(context: PageContext, report: ReturnType<typeof outcome>): HTMLElement {
  const { me } = context;
  return action(
    'Erase my data',
    async () => {
      const sure = await confirmStep({
        title: 'Erase everything Roster holds about you?',
        body: h('p', null, `It cannot be undone. Type ${me.name} to confirm.`),
        confirm: 'Erase my data',
        typeToConfirm: me.name,
      });
      if (!sure) return;
      try {
        await api('POST', '/api/me/erase', { confirm: me.name });
        window.location.assign('/');
      } catch (error) {
        report.fail(error);
      }
    },
    { kind: 'danger' },
  );
}
