import { describe, expect, it } from 'vitest';
import { addressing, approvalText, approvalInstructions, conversationId, editContent, matchesInviter, matrixCommand, reactionDecision, replyDecision, replyTarget } from './matrix-text.js';

const bot = { userId: '@roster:example.org', displayNames: ['Roster'] };

describe('Matrix commands', () => {
  it('rewrites Roster’s commands written !name or /name, and leaves other words alone', () => {
    expect(matrixCommand('!agents')).toEqual({ text: '/agents', command: true, foreign: false });
    expect(matrixCommand('!Agent  Scout ')).toEqual({ text: '/agent Scout', command: true, foreign: false });
    expect(matrixCommand('/link ABCD2345')).toEqual({ text: '/link ABCD2345', command: true, foreign: false });
    expect(matrixCommand('!ping')).toEqual({ text: '!ping', command: false, foreign: false });
    expect(matrixCommand('/shrug oh well')).toEqual({ text: '/shrug oh well', command: false, foreign: true });
    expect(matrixCommand('hello !agents')).toEqual({ text: 'hello !agents', command: false, foreign: false });
  });
});

describe('Matrix mentions', () => {
  it('reads a client’s pill and m.mentions, and takes the name off the words', () => {
    const pill = addressing({ body: 'Roster: what is new?', 'm.mentions': { user_ids: ['@roster:example.org'] } }, bot);
    expect(pill).toEqual({ namesBot: true, mentioned: true, intentional: true, text: 'what is new?' });
    expect(addressing({ body: 'hey @roster:example.org: lunch?', 'm.mentions': {} }, bot)).toMatchObject({ namesBot: true, text: 'hey lunch?' });
  });

  it('takes a display name in the words as a mention only from a client that sends no m.mentions', () => {
    expect(addressing({ body: 'roster, what is new?' }, bot)).toMatchObject({ namesBot: true, intentional: false, text: 'what is new?' });
    // A client that says whom it mentions, and mentions nobody: the word is just a word.
    expect(addressing({ body: 'the roster for Monday is out', 'm.mentions': {} }, bot)).toMatchObject({ namesBot: false, mentioned: false, text: 'the roster for Monday is out' });
    expect(addressing({ body: 'rosters are long' }, bot)).toMatchObject({ namesBot: false });
  });

  it('drops a reply’s quoted fallback and knows what it replies to, but not a thread’s fallback', () => {
    const reply = { body: '> <@roster:example.org> Noted: lunch at noon\n\nand dinner?', 'm.relates_to': { 'm.in_reply_to': { event_id: '$one' } } };
    expect(replyTarget(reply)).toBe('$one');
    expect(addressing(reply, bot).text).toBe('and dinner?');
    expect(replyTarget({ body: 'in a thread', 'm.relates_to': { rel_type: 'm.thread', event_id: '$root', is_falling_back: true, 'm.in_reply_to': { event_id: '$last' } } })).toBeNull();
    expect(replyTarget({ body: 'plain' })).toBeNull();
  });
});

describe('Matrix approvals without buttons', () => {
  it('reads 👍 and 👎 (with skin tones and variation selectors) and the usual others', () => {
    for (const key of ['👍', '👍🏽', '👍️', '✅', '✔️', '+1']) expect(reactionDecision(key)).toBe('approve');
    for (const key of ['👎', '👎🏿', '❌', '-1']) expect(reactionDecision(key)).toBe('reject');
    for (const key of ['❤️', '😂', 'ok']) expect(reactionDecision(key)).toBeNull();
  });

  it('reads a reply that decides, and nothing else', () => {
    expect(replyDecision('Approve')).toBe('approve');
    expect(replyDecision(' yes! ')).toBe('approve');
    expect(replyDecision('Reject.')).toBe('reject');
    expect(replyDecision('no')).toBe('reject');
    expect(replyDecision('approve it, but later')).toBeNull();
  });

  it('knows an approval’s own text without the instructions', () => {
    expect(approvalText(`Cite pages.${approvalInstructions}`)).toBe('Cite pages.');
    expect(approvalText('Cite pages.')).toBe('Cite pages.');
  });
});

describe('Matrix conversations and invitations', () => {
  it('keys a direct chat on its room and its person, a group on its room', () => {
    expect(conversationId('default', '!abc:example.org', 'dm', '@ada:example.org')).toBe('!abc:example.org/@ada:example.org');
    expect(conversationId('default', '!abc:example.org', 'group', '@ada:example.org')).toBe('!abc:example.org');
    expect(conversationId('second', '!abc:example.org', 'group', '@ada:example.org')).toBe('second:!abc:example.org');
  });

  it('matches inviters by id, by server, or anyone', () => {
    expect(matchesInviter('@ada:example.org', ['@ada:example.org'])).toBe(true);
    expect(matchesInviter('@bob:Example.org', ['*:example.org'])).toBe(true);
    expect(matchesInviter('@bob:example.org', ['*:other.org', '@ada:example.org'])).toBe(false);
    expect(matchesInviter('@eve:evil.org', ['*'])).toBe(true);
    expect(matchesInviter('@eve:evil.org', [])).toBe(false);
  });
});

describe('Matrix edits', () => {
  it('puts the whole text in m.new_content and a short fallback in the body, never half an emoji', () => {
    const text = `${'a'.repeat(1999)}😀${'b'.repeat(3000)}`;
    const edit = editContent('$original', text);
    expect(edit['m.relates_to']).toEqual({ rel_type: 'm.replace', event_id: '$original' });
    expect((edit['m.new_content'] as { body: string }).body).toBe(text);
    expect(edit.body).toBe(`* ${'a'.repeat(1999)} …`);
    expect(editContent('$original', 'short').body).toBe('* short');
  });
});
