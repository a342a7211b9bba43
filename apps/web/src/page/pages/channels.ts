import { api, segment, type ChannelStatus } from '../api.ts';
import { field, h, replace, select, time } from '../dom.ts';
import { action, badge, confirmStep, empty, form, listAgents, loading, outcome, text, type PageContext } from '../ui.ts';
import { channelLinkPanel } from './channel-link.ts';

const sourceText: Record<string, string> = {
  environment: 'set in the environment (it wins over a stored one)',
  stored: 'stored, sealed with the installation key',
  unset: 'not set',
};

/** The credentials of one channel: where each comes from, and a write-only form to store new ones. */
function credentialsForm(context: PageContext, channel: ChannelStatus): HTMLElement | null {
  if (channel.credentials.length === 0) return null;
  const inputs = channel.credentials.map((credential) =>
    field(
      credential.label[0]!.toUpperCase() + credential.label.slice(1),
      h('input', { type: 'password', name: credential.name, autocomplete: 'off', spellcheck: 'false', maxlength: '1024' }),
      `${credential.variable}: ${sourceText[credential.source]}${credential.updatedAt === null ? '' : `, since ${new Date(credential.updatedAt).toLocaleString()}`}`,
    ),
  );
  const store = form({
    label: `${channel.channel} credentials`,
    submit: `Save ${channel.channel} token`,
    fields: [h('p', { class: 'hint' }, 'A stored token is never shown again: leave a field empty to keep what is there.'), ...inputs],
    async run(data, report) {
      const values: Record<string, string> = {};
      for (const credential of channel.credentials) {
        const value = text(data, credential.name);
        if (value !== '') values[credential.name] = value;
      }
      if (Object.keys(values).length === 0) {
        report.say('Nothing to save: type a token first.');
        return;
      }
      await api('POST', `/api/channels/${segment(channel.channel)}/credentials`, { values });
      context.announce(`${channel.channel}: saved. A running gateway picks it up within seconds.`);
      context.navigate('/channels', true);
    },
  });
  const stored = channel.credentials.some((credential) => credential.source === 'stored');
  const report = outcome();
  return h(
    'div',
    { class: 'stack' },
    store,
    stored
      ? h(
          'div',
          { class: 'actions' },
          action(
            `Remove stored ${channel.channel} tokens`,
            async () => {
              const sure = await confirmStep({
                title: `Remove ${channel.channel}'s stored tokens?`,
                body: h('p', null, 'The gateway stops serving this channel within seconds, unless a token is set in the environment.'),
                confirm: 'Remove',
              });
              if (!sure) return;
              try {
                await api('DELETE', `/api/channels/${segment(channel.channel)}/credentials`);
                context.announce(`${channel.channel}: stored tokens removed.`);
                context.navigate('/channels', true);
              } catch (error) {
                report.fail(error);
              }
            },
            { kind: 'danger' },
          ),
          report.element,
        )
      : null,
  );
}

/** Which agent the channel's bot talks to, and whom it answers. */
function bindingForm(context: PageContext, channel: ChannelStatus, agents: string[]): HTMLElement {
  const binding = channel.bindings.find((entry) => entry.account === 'default');
  const agent = select('agent', [['', 'The whole wallet (people pick with /agent)'], ...agents.map((name) => [name, name] as const)], binding?.agent ?? '');
  const policy = select(
    'policy',
    [
      ['pairing', 'Pairing: linked people only; strangers get the pairing hint'],
      ['allowlist', 'Allowlist: linked people and the handles below'],
      ['open', 'Open: strangers as guests (no memory, no tools)'],
    ],
    binding?.policy ?? 'pairing',
  );
  const allow = h('textarea', { name: 'allowlist', rows: '2', placeholder: 'One platform handle per line' }, (binding?.allowlist ?? []).join('\n'));
  return form({
    label: `${channel.channel} binding`,
    submit: 'Save binding',
    kind: 'plain',
    fields: [field('Talks to', agent), field('Answers', policy), field('Allowed handles', allow, 'Only for the allowlist policy.')],
    async run(data, report) {
      const chosenPolicy = text(data, 'policy');
      const handles = text(data, 'allowlist')
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line !== '');
      const answer = await api<{ agent: string | null; policy: string }>('POST', `/api/channels/${segment(channel.channel)}/binding`, {
        agent: text(data, 'agent') === '' ? null : text(data, 'agent'),
        policy: chosenPolicy,
        ...(chosenPolicy === 'allowlist' ? { allowlist: handles } : {}),
      });
      report.say(`${channel.channel} talks to ${answer.agent ?? 'the whole wallet'} under the ${answer.policy} policy.`);
      context.announce(`${channel.channel} binding saved.`);
    },
  });
}

function channelCard(context: PageContext, channel: ChannelStatus, agents: string[]): HTMLElement {
  return h(
    'li',
    { class: 'card', 'data-channel': channel.channel },
    h('div', { class: 'card-head' }, h('h3', null, channel.label), badge(channel.configured ? 'on' : 'off')),
    h('p', { class: 'hint' }, channel.detail),
    channel.accounts.length === 0
      ? null
      : h(
          'ul',
          { class: 'accounts', 'aria-label': `${channel.label}: who receives it` },
          channel.accounts.map((account) =>
            h('li', { 'data-account': account.account, 'data-state': account.state }, badge(account.state), ' ', account.detail, account.since === null ? null : h('span', null, ' (', time(account.since), ')')),
          ),
        ),
    credentialsForm(context, channel),
    channel.linkable ? channelLinkPanel(channel) : null,
    bindingForm(context, channel, agents),
  );
}

/** The channels: state, tokens (write only), and bindings. */
export async function channelsPage(context: PageContext): Promise<void> {
  const { root } = context;
  loading(root, 'channels');
  const [channels, agents] = await Promise.all([
    api<{ channels: ChannelStatus[] }>('GET', '/api/channels').then((answer) => answer.channels),
    listAgents().then((list) => list.filter((agent) => agent.status === 'active').map((agent) => agent.name)),
  ]);
  replace(
    root,
    h(
      'section',
      { 'aria-labelledby': 'channels' },
      h('h2', { id: 'channels' }, 'Bots and whom they answer'),
      h('p', { class: 'hint' }, 'People link a channel handle with a code from the People page (/link CODE). ', 'Last looked at ', time(new Date().toISOString()), '.'),
      channels.length === 0 ? empty('No channel is known.') : h('ul', { class: 'cards channels' }, channels.map((channel) => channelCard(context, channel, agents))),
    ),
  );
}
