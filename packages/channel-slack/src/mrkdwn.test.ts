import { describe, expect, it } from 'vitest';
import { escapeMrkdwn, toMrkdwn } from './mrkdwn.js';

describe('toMrkdwn: the Markdown an engine writes, in Slack mrkdwn', () => {
  it.each([
    // Emphasis.
    ['bold', 'a **bold** word', 'a *bold* word'],
    ['bold with underscores', 'a __bold__ word', 'a *bold* word'],
    ['italic with stars', 'an *italic* word', 'an _italic_ word'],
    ['italic with underscores, already mrkdwn', 'an _italic_ word', 'an _italic_ word'],
    ['strike', 'a ~~struck~~ word', 'a ~struck~ word'],
    ['bold and italic at once', '***both***', '*_both_*'],
    ['italic inside bold', '**bold with *italic* inside**', '*bold with _italic_ inside*'],
    ['bold inside italic', '*italic with **bold** inside*', '_italic with *bold* inside_'],
    ['several on a line', '**a** and **b**, *c* and ~~d~~.', '*a* and *b*, _c_ and ~d~.'],
    ['emphasis before punctuation', 'it is *done*, **really**!', 'it is _done_, *really*!'],
    // What is no emphasis stays as written.
    ['markers inside words', 'snake_case_name, 2*3*4 and a*b*c', 'snake_case_name, 2*3*4 and a*b*c'],
    ['a marker with space after it', 'a * b * c', 'a * b * c'],
    ['a marker never closed', 'unclosed **bold and *italic', 'unclosed **bold and *italic'],
    ['emphasis never spans lines', '**one\ntwo**', '**one\ntwo**'],
    ['escaped markers', '\\*not italic\\* and \\_not\\_', '*not italic* and _not_'],
    // Links.
    ['a link', 'see [the docs](https://example.com/docs) now', 'see <https://example.com/docs|the docs> now'],
    ['a link whose address has & and a title', '[map](https://maps.example/?a=1&b=2 "The map")', '<https://maps.example/?a=1&amp;b=2|map>'],
    ['a link with & < > in its text', '[A & <B>](https://example.com)', '<https://example.com|A &amp; &lt;B&gt;>'],
    ['a link whose text is its address', '[https://example.com](https://example.com)', '<https://example.com>'],
    ['a link with parentheses in its address', '[Ada](https://en.wikipedia.org/wiki/Ada_(language))', '<https://en.wikipedia.org/wiki/Ada_(language)|Ada>'],
    ['a link in angle brackets', '[y](<https://a.example/c>)', '<https://a.example/c|y>'],
    ['an address with | in it', '[x](https://a.example/p|q)', '<https://a.example/p%7Cq|x>'],
    ['a mail link', '[write](mailto:ada@example.com)', '<mailto:ada@example.com|write>'],
    ['an image', '![a chart](https://example.com/chart.png)', '<https://example.com/chart.png|a chart>'],
    ['an autolink', 'at <https://example.com/x> today', 'at <https://example.com/x> today'],
    ['a bold link', '**[docs](https://example.com)**', '*<https://example.com|docs>*'],
    ['no link to another scheme', '[x](javascript:alert(1))', '[x](javascript:alert(1))'],
    ['no link to a relative address', '[x](/etc/passwd)', '[x](/etc/passwd)'],
    // Headings become bold lines.
    ['a heading', '# Title', '*Title*'],
    ['a heading with closing hashes and bold in it', '## **Bold** heading ##', '*Bold heading*'],
    ['a heading with italic and code', '### The *plan* for `main`', '*The _plan_ for `main`*'],
    ['a hashtag is no heading', '#general and #5', '#general and #5'],
    // Code is kept as written inside, only escaped.
    ['a code span', 'run `a **b** <c> & d_e_f` here', 'run `a **b** &lt;c&gt; &amp; d_e_f` here'],
    ['a code span of two backticks', 'say ``a ` b`` then', 'say ``a ` b`` then'],
    ['a link inside code', '`[x](https://example.com)`', '`[x](https://example.com)`'],
    ['emphasis around code', '**use `npm ci`**', '*use `npm ci`*'],
    ['a marker in code cannot close one outside', '*a `b* c` d*', '_a `b* c` d_'],
    ['a fence', 'Run:\n```ts\nconst x = a < b && **c**;\n# not a heading\n```\ndone', 'Run:\n```\nconst x = a &lt; b &amp;&amp; **c**;\n# not a heading\n```\ndone'],
    ['a tilde fence', '~~~\n~~not struck~~\n~~~', '```\n~~not struck~~\n```'],
    ['a fence in a list item', '1. Step:\n   ```bash\n   npm ci\n     --quiet\n   ```\n2. **Done**', '1. Step:\n```\nnpm ci\n  --quiet\n```\n2. *Done*'],
    ['a fence left open (a reply still being written)', 'see:\n```\nwhile (a < b) {', 'see:\n```\nwhile (a &lt; b) {\n```'],
    ['three backticks on one line', 'a ```one **line**``` b', 'a ```one **line**``` b'],
    // Lists, quotes and the rest pass through.
    ['bullet lists', '- one\n- **two**\n* three *four*\n+ five', '- one\n- *two*\n* three _four_\n+ five'],
    ['a numbered list', '1. first\n2. second', '1. first\n2. second'],
    ['a quote', '> quoted & kept', '&gt; quoted &amp; kept'],
    ['a rule', 'above\n\n---\n***\nbelow', 'above\n\n---\n***\nbelow'],
    // Slack's control characters never act by themselves.
    ['a channel ping and a mention', 'Tell <!channel> & <@U999> now', 'Tell &lt;!channel&gt; &amp; &lt;@U999&gt; now'],
    ['a link made by hand in Slack syntax', '<https://example.com|click> <!here>', '&lt;https://example.com|click&gt; &lt;!here&gt;'],
    ['an entity as written', 'a &amp; b', 'a &amp;amp; b'],
    ['plain text', 'Noted: my desk is on floor 3', 'Noted: my desk is on floor 3'],
    ['nothing', '', ''],
  ])('%s', (_name, markdown, mrkdwn) => {
    expect(toMrkdwn(markdown)).toBe(mrkdwn);
  });

  it('leaves a long line of markers that never close as written', () => {
    // Positive control beside it: the same line with its markers closed is converted.
    const closed = '**a** '.repeat(5000).trim();
    expect(toMrkdwn(closed)).toBe('*a* '.repeat(5000).trim());
    const open = '**a '.repeat(10_000);
    expect(toMrkdwn(open)).toBe(open);
  });

  it('uses no placeholder the text could hold: private-use characters pass through', () => {
    const text = `\uE000 **bold** \uE0000\uE000 \`code\` \uE001`;
    expect(toMrkdwn(text)).toBe(`\uE000 *bold* \uE0000\uE000 \`code\` \uE001`);
  });
});

describe('escapeMrkdwn', () => {
  it('escapes &, < and > and nothing else', () => {
    expect(escapeMrkdwn('**a** <!channel> & _b_')).toBe('**a** &lt;!channel&gt; &amp; _b_');
  });
});
