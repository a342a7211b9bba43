/**
 * A person's words as an agent says them back: "my locker" → "your locker",
 * "I live" → "you live", "I was" → "you were". An engine that needs no model
 * answers so, and a forget reaches the replies that said a fact back this
 * way as well as those that repeated it word for word.
 */
export function secondPerson(text: string): string {
  const swaps: Record<string, string> = { i: 'you', me: 'you', my: 'your', mine: 'yours', myself: 'yourself', am: 'are', "i'm": "you're", 'i’m': 'you’re' };
  let afterI = false;
  return text.replace(/[\p{L}\p{N}'’]+/gu, (word) => {
    const lower = word.toLowerCase();
    let swapped: string | undefined = swaps[lower];
    if (lower === 'am' && !afterI) swapped = undefined;
    if (lower === 'was' && afterI) swapped = 'were';
    afterI = lower === 'i';
    if (swapped === undefined) return word;
    return word[0] === word[0]!.toUpperCase() && lower !== 'i' ? swapped[0]!.toUpperCase() + swapped.slice(1) : swapped;
  });
}

