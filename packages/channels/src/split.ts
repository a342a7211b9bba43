/**
 * Split a reply into messages of at most `limit` UTF-16 code units, each cut
 * at the last paragraph, line or sentence end that fits (in that order of
 * preference, when it keeps at least half the room), else at the last space,
 * else hard, never inside a surrogate pair. Whitespace at a cut is dropped;
 * nothing else is lost or reordered.
 */
export function splitText(text: string, limit: number): string[] {
  if (!Number.isInteger(limit) || limit < 16) throw new RangeError(`A message limit is a whole number of at least 16, got ${limit}.`);
  const parts: string[] = [];
  let rest = text.trim();
  while (rest.length > limit) {
    const cut = cutPoint(rest, limit);
    const head = rest.slice(0, cut).trimEnd();
    if (head !== '') parts.push(head);
    rest = rest.slice(cut).trimStart();
  }
  if (rest !== '' || parts.length === 0) parts.push(rest);
  return parts;
}

/** Where to end the next part: an index in (0, limit]. */
function cutPoint(text: string, limit: number): number {
  const window = text.slice(0, limit + 1);
  const half = Math.floor(limit / 2);
  // A cut before whitespace (dropped at the cut) may fall at the limit itself; one after punctuation keeps the punctuation.
  const last = (pattern: RegExp, at: 'start' | 'end'): number => {
    let found = -1;
    for (const match of window.matchAll(pattern)) {
      const cut = at === 'start' ? match.index : match.index + match[0].length;
      if (cut > 0 && cut <= limit) found = cut;
    }
    return found;
  };
  for (const [pattern, at] of [
    [/\n\s*\n/g, 'start'],
    [/\n/g, 'start'],
    [/[.!?…。！？](?:["'”’)\]]*)(?=\s)/gu, 'end'],
  ] as const) {
    const cut = last(pattern, at);
    if (cut >= half) return cut;
  }
  const space = last(/\s+/g, 'start');
  if (space > 0) return space;
  // No boundary at all: cut hard, but not between the halves of a surrogate pair.
  const code = text.charCodeAt(limit - 1);
  return code >= 0xd800 && code <= 0xdbff ? limit - 1 : limit;
}
