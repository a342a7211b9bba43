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
  const last = (pattern: RegExp): number => {
    let found = -1;
    for (const match of window.matchAll(pattern)) {
      const end = match.index + match[0].length;
      if (end <= limit) found = end;
    }
    return found;
  };
  for (const pattern of [/\n\s*\n/g, /\n/g, /[.!?…。！？](?:["'”’)\]]*)(?=\s)/gu]) {
    const end = last(pattern);
    if (end >= half) return end;
  }
  const space = last(/\s+/g);
  if (space > 0) return space;
  // No boundary at all: cut hard, but not between the halves of a surrogate pair.
  const code = text.charCodeAt(limit - 1);
  return code >= 0xd800 && code <= 0xdbff ? limit - 1 : limit;
}
