import { api, segment, type ChannelStatus, type PersonWithIdentities } from '../api.ts';
import { field, h, replace, select, time } from '../dom.ts';
import { action, badge, empty, form, loading, outcome, text, type PageContext } from '../ui.ts';
import { whatsappPanel } from './whatsapp.ts';

function personCard(person: PersonWithIdentities): HTMLElement {
  const report = outcome();
  const code = h('div', { class: 'link-code' });
  return h(
    'li',
    { class: 'card', 'data-person': person.name },
    h('div', { class: 'card-head' }, h('h3', null, person.name), badge(person.role)),
    person.identities.length === 0
      ? h('p', { class: 'hint' }, 'No channel identity linked yet.')
      : h(
          'ul',
          { class: 'identities', 'aria-label': `Identities of ${person.name}` },
          person.identities.map((identity) => h('li', null, h('span', { class: 'tag' }, identity.channel), ' ', identity.displayName ?? identity.externalId, identity.displayName === null ? null : h('small', { class: 'hint' }, ` (${identity.externalId})`))),
        ),
    h(
      'div',
      { class: 'actions' },
      action(`Link code for ${person.name}`, async () => {
        try {
          const answer = await api<{ code: string; expiresAt: string }>('POST', `/api/people/${segment(person.name)}/link-code`);
          replace(code, h('p', null, 'Send ', h('code', { class: 'code' }, answer.code), ' to the bot from the new account; it works once, until ', time(answer.expiresAt), '.'));
        } catch (error) {
          report.fail(error);
        }
      }),
    ),
    code,
    report.element,
  );
}

export async function peoplePage(context: PageContext): Promise<void> {
  const { root } = context;
  loading(root, 'people');
  const [people, channels] = await Promise.all([
    api<{ people: PersonWithIdentities[] }>('GET', '/api/people').then((answer) => answer.people),
    api<{ channels: ChannelStatus[] }>('GET', '/api/channels').then((answer) => answer.channels),
  ]);
  const add = form({
    label: 'New person',
    submit: 'Add person',
    fields: [
      field('Name', h('input', { type: 'text', name: 'name', required: true, maxlength: '80', autocomplete: 'off' })),
      field('Role', select('role', [['member', 'Member: talks to agents, sees their own memory'], ['guest', 'Guest'], ['owner', 'Owner: manages everything']], 'member')),
    ],
    async run(data, report) {
      const name = text(data, 'name');
      await api('POST', '/api/people', { name, role: text(data, 'role') });
      report.say(`${name} was added.`);
      context.announce(`${name} was added.`);
      context.navigate('/people', true);
    },
  });
  replace(
    root,
    h('section', { 'aria-labelledby': 'people' }, h('h2', { id: 'people' }, 'People'), people.length === 0 ? empty('Nobody yet.') : h('ul', { class: 'cards' }, people.map(personCard))),
    h('section', { 'aria-labelledby': 'people-new' }, h('h2', { id: 'people-new' }, 'New person'), add),
    h(
      'section',
      { 'aria-labelledby': 'channels' },
      h('h2', { id: 'channels' }, 'Channels'),
      channels.length === 0
        ? empty('No channel is known.')
        : h(
            'ul',
            { class: 'cards channels' },
            channels.map((channel) => h('li', { class: 'card' }, h('div', { class: 'card-head' }, h('h3', null, channel.channel), badge(channel.configured ? 'on' : 'off')), h('p', { class: 'hint' }, channel.detail))),
          ),
      whatsappPanel(),
    ),
  );
}
