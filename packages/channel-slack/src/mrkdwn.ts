/**
 * Slack's mrkdwn, from the Markdown an engine writes. Slack reads `&`, `<`
 * and `>` as control characters (`<!channel>`, `<@U123>`, `<url|text>`), so
 * they are escaped everywhere, code included; the only `<…>` that goes out
 * is a link made here from Markdown's own link syntax.
 */

/** `&`, `<` and `>` escaped: the text shows as written and can mention, ping or link nothing by itself. */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** What a person wrote, from Slack's escaped text. */
export function fromMrkdwn(text: string): string {
  return text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

/**
 * Markdown as an engine writes it, in Slack's mrkdwn: `**bold**` and
 * `__bold__` → `*bold*`, `*italic*` and `_italic_` → `_italic_`,
 * `~~strike~~` → `~strike~`, `[text](url)` → `<url|text>` (http, https and
 * mailto addresses only; any other stays as written), a heading → a bold
 * line. Code spans and fenced blocks are kept as written inside (a fence
 * loses its language, which Slack would show as the first line of code; one
 * left open, as in a reply still being written, is closed). Lists, quotes and
 * everything else pass through. Emphasis never spans lines, and a marker
 * inside a word (`snake_case`, `2*3*4`) is left alone.
 */
export function toMrkdwn(markdown: string): string {
  const lines = markdown.split('\n');
  const out: string[] = [];
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index]!;
    const open = /^([ \t]*)(`{3,}|~{3,})(.*)$/.exec(line);
    // A backtick fence's info string holds no backtick: "```code```" on one line is a code span.
    if (open === null || (open[2]![0] === '`' && open[3]!.includes('`'))) {
      out.push(convertLine(line));
      continue;
    }
    // A fence may be indented (in a list item): its lines lose that indentation, and keep the rest.
    const indent = open[1]!;
    const fence = open[2]!;
    const close = new RegExp(`^[ \\t]*${fence[0] === '`' ? '`' : '~'}{${fence.length},}[ \\t]*$`);
    const code: string[] = [];
    let next = index + 1;
    while (next < lines.length && !close.test(lines[next]!)) {
      const codeLine = lines[next++]!;
      code.push(codeLine.startsWith(indent) ? codeLine.slice(indent.length) : codeLine.trimStart());
    }
    out.push('```', ...code.map(escapeMrkdwn), '```');
    index = next;
  }
  return out.join('\n');
}

const headingPattern = /^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;

/** One line that is not inside a fenced block. */
function convertLine(line: string): string {
  const heading = headingPattern.exec(line);
  if (heading !== null) {
    const words = (heading[1] ?? '').trim();
    // Bold inside a heading is the heading's own bold: one pair of `*` around the line.
    return words === '' ? '' : `*${convertInline(words, true)}*`;
  }
  return convertInline(line, false);
}

/**
 * Inline Markdown on one line. What is converted is held aside behind a
 * placeholder (a private-use character the line does not contain, around a
 * number), so that no later rule reads inside code, a link or a marker made
 * here; the rest is escaped, then the held parts are put back.
 */
function convertInline(line: string, inBold: boolean): string {
  let mark = 0xe000;
  while (line.includes(String.fromCharCode(mark))) mark += 1;
  const sign = String.fromCharCode(mark);
  const held: string[] = [];
  const hold = (value: string) => `${sign}${held.push(value) - 1}${sign}`;
  const restore = (text: string) => text.replace(new RegExp(`${sign}(\\d+)${sign}`, 'g'), (_, at: string) => held[Number(at)]!);
  const bold = inBold ? '' : '*';

  let text = line;
  // Code spans: a run of backticks closed by a run of the same length; kept as written.
  text = text.replace(/(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)/g, (span) => hold(escapeMrkdwn(span)));
  // Markdown's backslash escapes: the character itself, taken by no other rule.
  text = text.replace(/\\([!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~])/g, (_, character: string) => hold(escapeMrkdwn(character)));
  // Links and images, `[text](url "title")`, and autolinks `<url>` (not Slack's own `<url|text>`, which shows as written).
  text = text.replace(/!?\[([^[\]]*)\]\(\s*<?((?:[^\s()<>]|\([^\s()<>]*\))+)>?(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g, (whole, label: string, url: string) => {
    if (!safeUrl(url)) return whole;
    // The text keeps what is held in it (code, escaped characters): escaped here, put back at the end.
    const words = label.trim();
    return hold(words === '' || words === url ? `<${linkUrl(url)}>` : `<${linkUrl(url)}|${escapeMrkdwn(words)}>`);
  });
  text = text.replace(/<((?:https?:\/\/|mailto:)[^\s<>|]+)>/gi, (whole, url: string) => (safeUrl(url) ? hold(`<${linkUrl(url)}>`) : whole));
  // Emphasis, strongest first; each marker made is held so that the next rule does not read it again.
  // At most 1,000 characters inside one: a long line of markers that never close costs time in proportion to its length.
  text = text.replace(/\*\*\*(?![\s*])([^*]{1,1000}?)(?<!\s)\*\*\*/g, (_, words: string) => `${hold(`${bold}_`)}${words}${hold(`_${bold}`)}`);
  text = text.replace(/\*\*(?![\s*])(.{1,1000}?)(?<![\s*])\*\*/g, (_, words: string) => `${hold(bold)}${words}${hold(bold)}`);
  text = text.replace(/(?<![\p{L}\p{N}_])__(?![\s_])(.{1,1000}?)(?<![\s_])__(?![\p{L}\p{N}_])/gu, (_, words: string) => `${hold(bold)}${words}${hold(bold)}`);
  text = text.replace(/~~(?![\s~])(.{1,1000}?)(?<![\s~])~~/g, (_, words: string) => `${hold('~')}${words}${hold('~')}`);
  text = text.replace(/(?<![\p{L}\p{N}*])\*(?![\s*])([^*]{1,1000}?)(?<![\s*])\*(?![\p{L}\p{N}*])/gu, (_, words: string) => `${hold('_')}${words}${hold('_')}`);

  let result = escapeMrkdwn(text);
  // A held part may hold others (a link's text with code in it): put back until none is left.
  while (result.includes(sign)) result = restore(result);
  return result;
}

/** A link Slack can open: http, https or mailto, with nothing that would end Slack's `<…>`. */
function safeUrl(url: string): boolean {
  return /^(?:https?:\/\/[^\s/?#]+|mailto:[^\s@]+@)[^\s<>]*$/i.test(url);
}

/** A URL inside Slack's `<url|text>`: `&` escaped as Slack wants it, `|` (which would end the address) percent-encoded. */
function linkUrl(url: string): string {
  return url.replace(/&/g, '&amp;').replace(/\|/g, '%7C');
}
