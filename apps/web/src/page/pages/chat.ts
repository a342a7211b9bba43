import { api, chat, type ChatHistory, type ChatMemory, type ChatToolCall, type TranscriptLine, type TurnEnd } from '../api.ts';
import { field, h, replace, select } from '../dom.ts';
import { badge, empty, errorText, listAgents, loading, rememberAgent, type PageContext } from '../ui.ts';

/** The longest message the server takes, in characters (code points, after trimming), as the CLI and the API count them. */
const maxLength = 4000;
/** From here on, the composer shows how many characters are left. */
const counterFrom = 3600;
const numberFormat = new Intl.NumberFormat('en-US');

/** A message's length as the server counts it. */
function lengthOf(words: string): number {
  return [...words.trim()].length;
}

/** The sentence that refuses a message over the limit: its length, the limit, and what to do. */
function tooLong(length: number): string {
  return `The message is ${numberFormat.format(length)} characters; the most is ${numberFormat.format(maxLength)}. Nothing was sent: shorten it, or send it in parts.`;
}

/** One reply as it streams in: the agent's name, its words, then what it used. */
interface Reply {
  element: HTMLElement;
  body: HTMLElement;
  text: string;
}

function json(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, 2) ?? '';
  } catch {
    return String(value);
  }
}

function disclosure(turn: TurnEnd): HTMLElement {
  const memories: ChatMemory[] = turn.memories ?? [];
  const tools: ChatToolCall[] = turn.toolCalls ?? [];
  const summary = `${memories.length} ${memories.length === 1 ? 'memory' : 'memories'} used, ${tools.length} ${tools.length === 1 ? 'tool' : 'tools'} called`;
  return h(
    'details',
    { class: 'used' },
    h('summary', null, summary),
    h('h4', null, 'Memories used'),
    memories.length === 0
      ? empty('None.')
      : h(
          'ul',
          null,
          memories.map((memory) => h('li', null, badge(memory.trust), ' ', memory.content ?? h('em', null, 'forgotten'), memory.why === '' ? null : h('small', { class: 'hint' }, ` — ${memory.why}`))),
        ),
    h('h4', null, 'Tools called'),
    tools.length === 0
      ? empty('None.')
      : h(
          'ol',
          null,
          tools.map((call) =>
            h('li', null, h('code', null, call.toolName), h('div', { class: 'io' }, h('span', null, 'input'), h('pre', null, json(call.input)), h('span', null, 'output'), h('pre', null, json(call.output)))),
          ),
        ),
  );
}

/** A line said before this page was opened. A forgotten line shows that it was there, never its words. */
function pastLine(line: TranscriptLine): HTMLElement {
  const speaker = line.role === 'person' ? 'You' : line.role === 'agent' ? (line.agent ?? 'Agent') : 'Roster';
  const kind = line.role === 'person' ? 'mine' : line.role === 'agent' ? 'theirs' : 'notice';
  return h(
    'li',
    { class: `turn ${kind} past${line.forgotten ? ' forgotten' : ''}`, ...(line.agent === null ? {} : { 'data-agent': line.agent }) },
    h('span', { class: 'speaker' }, speaker),
    line.forgotten ? h('p', null, h('em', null, 'Forgotten')) : h('p', null, line.text),
  );
}

export async function chatPage(context: PageContext): Promise<void> {
  const { root, params } = context;
  loading(root, 'agents');
  const agents = (await listAgents()).filter((agent) => agent.status === 'active');
  const team = params.get('team') === 'true' && agents.length > 1;
  const asked = params.get('agent');
  const chosen = team ? 'team' : asked !== null && agents.some((agent) => agent.name === asked) ? asked : (agents[0]?.name ?? '');

  const options: Array<readonly [string, string]> = agents.map((agent) => [agent.name, agent.name] as const);
  if (agents.length > 1) options.push(['team', 'The whole team']);
  if (chosen !== 'team' && chosen !== '') rememberAgent(chosen);
  const target = select('target', options, chosen);
  target.addEventListener('change', () => {
    context.navigate(target.value === 'team' ? '/chat?team=true' : `/chat?agent=${encodeURIComponent(target.value)}`);
  });
  if (agents.length === 0) {
    replace(root, empty(context.me.role === 'owner' ? 'There is no active agent to talk to: create one on the Agents page.' : 'There is no agent to talk to yet: ask the owner to create one.'));
    return;
  }

  const history = await api<ChatHistory>('GET', `/api/chat/history?team=${chosen === 'team'}&limit=100`);
  const log = h('ol', { class: 'log', role: 'log', 'aria-live': 'polite', 'aria-label': chosen === 'team' ? 'Conversation with the whole team' : `Conversation with ${chosen}` }, history.messages.map(pastLine));
  // No maxlength: it would cut a long paste silently. The counter says when the limit nears, and a longer message is refused whole.
  const message = h('textarea', { name: 'message', rows: '3', required: true, 'aria-describedby': 'message-counter', placeholder: 'Say something; “remember that …” stores a fact.' });
  const counter = h('p', { class: 'counter', id: 'message-counter', 'aria-live': 'polite', hidden: true });
  const count = (): number => {
    const length = lengthOf(message.value);
    const over = length > maxLength;
    counter.hidden = length < counterFrom;
    counter.className = over ? 'counter over' : 'counter';
    counter.textContent = over
      ? `${numberFormat.format(length)} of ${numberFormat.format(maxLength)} characters: ${numberFormat.format(length - maxLength)} too many.`
      : `${numberFormat.format(length)} of ${numberFormat.format(maxLength)} characters.`;
    if (over) message.setAttribute('aria-invalid', 'true');
    else message.removeAttribute('aria-invalid');
    return length;
  };
  message.addEventListener('input', count);
  const send = h('button', { type: 'submit', class: 'primary' }, 'Send');
  const problem = h('p', { class: 'outcome', role: 'alert' });
  const composer = h('form', { class: 'composer', 'aria-label': 'Send a message' }, field('Message', message, `Enter sends; Shift+Enter starts a new line. At most ${numberFormat.format(maxLength)} characters.`), counter, h('div', { class: 'actions' }, send), problem);
  let conversation: string | undefined = history.conversationId ?? undefined;

  message.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      composer.requestSubmit();
    }
  });

  composer.addEventListener('submit', async (event) => {
    event.preventDefault();
    const words = message.value.trim();
    if (words === '' || send.disabled) return;
    // Refused whole, never cut: the words stay for the person to shorten.
    const length = count();
    if (length > maxLength) {
      problem.className = 'outcome error';
      problem.textContent = tooLong(length);
      message.focus();
      return;
    }
    send.disabled = true;
    message.setAttribute('aria-busy', 'true');
    problem.textContent = '';
    problem.className = 'outcome';
    log.appendChild(h('li', { class: 'turn mine' }, h('span', { class: 'speaker' }, 'You'), h('p', null, words)));
    message.value = '';
    count();
    const replies = new Map<string, Reply>();
    const replyFor = (agent: string): Reply => {
      let reply = replies.get(agent);
      if (reply === undefined) {
        const body = h('p', { class: 'streaming' });
        const element = h('li', { class: 'turn theirs', 'data-agent': agent }, h('span', { class: 'speaker' }, agent), body);
        log.appendChild(element);
        reply = { element, body, text: '' };
        replies.set(agent, reply);
      }
      return reply;
    };
    try {
      await chat(
        { ...(chosen === 'team' ? { team: true as const } : { agent: chosen }), message: words, ...(conversation === undefined ? {} : { conversation }) },
        {
          delta(agent, delta) {
            const reply = replyFor(agent);
            reply.text += delta;
            reply.body.textContent = reply.text;
          },
          turnEnd(turn) {
            const reply = replyFor(turn.agent);
            reply.text = turn.text;
            reply.body.textContent = turn.text;
            reply.body.className = '';
            reply.element.appendChild(disclosure(turn));
          },
          notice(text) {
            log.appendChild(h('li', { class: 'turn notice' }, h('span', { class: 'speaker' }, 'Roster'), h('p', null, text)));
          },
          done(conversationId) {
            if (conversationId !== '') conversation = conversationId;
          },
        },
      );
    } catch (error) {
      problem.className = 'outcome error';
      problem.textContent = errorText(error);
      // The words stay so they can be sent again.
      if (replies.size === 0) {
        message.value = words;
        count();
      }
    } finally {
      for (const reply of replies.values()) reply.body.classList.remove('streaming');
      send.disabled = false;
      message.removeAttribute('aria-busy');
      message.focus();
      composer.scrollIntoView({ block: 'nearest' });
    }
  });

  replace(root, h('div', { class: 'chooser' }, field('Talk to', target)), log, composer);
  message.focus();
}
