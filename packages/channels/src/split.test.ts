import { describe, expect, it } from 'vitest';
import { splitText } from './split.js';

describe('splitText', () => {
  it('keeps a text that fits in one part, trimmed', () => {
    expect(splitText('  Hello there.  ', 100)).toEqual(['Hello there.']);
  });

  it('cuts at a paragraph, then a line, then a sentence end, then a space, keeping every word in order', () => {
    const paragraph = `${'a'.repeat(30)}.\n\n${'b'.repeat(30)}`;
    expect(splitText(paragraph, 40)).toEqual([`${'a'.repeat(30)}.`, 'b'.repeat(30)]);
    const lines = `one line here\nanother line that is long`;
    expect(splitText(lines, 20)).toEqual(['one line here', 'another line that is', 'long']);
    const sentences = 'First sentence is here. Second one follows it. Third.';
    expect(splitText(sentences, 30)).toEqual(['First sentence is here.', 'Second one follows it. Third.']);
  });

  it('cuts a text without any boundary hard, never between the halves of a surrogate pair', () => {
    const emoji = '😀'.repeat(20);
    const parts = splitText(emoji, 17);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(17);
    expect(parts.join('')).toBe(emoji);
    expect(parts.every((part) => !/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/.test(part))).toBe(true);
  });

  it('refuses a limit too small to hold a sentence', () => {
    expect(() => splitText('hello', 3)).toThrow(/at least 16/);
  });
});
