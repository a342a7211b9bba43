import { describe, expect, it } from 'vitest';
import { EventStreamParser, readEventStream, type ServerSentEvent } from './event-stream.ts';

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

async function collect(chunks: string[]): Promise<ServerSentEvent[]> {
  const events: ServerSentEvent[] = [];
  for await (const event of readEventStream(streamOf(chunks))) events.push(event);
  return events;
}

describe('the event-stream reader', () => {
  it('reads named events whose lines and characters arrive cut anywhere', async () => {
    const body = 'event: text-delta\ndata: {"agent":"Zoë","delta":"Hel"}\n\nevent: turn-end\ndata: {"agent":"Zoë","text":"Hello"}\n\n';
    const whole = await collect([body]);
    expect(whole).toEqual([
      { event: 'text-delta', data: '{"agent":"Zoë","delta":"Hel"}' },
      { event: 'turn-end', data: '{"agent":"Zoë","text":"Hello"}' },
    ]);
    // Byte by byte, through the multi-byte ë: the same events.
    const bytes = new TextEncoder().encode(body);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const byte of bytes) controller.enqueue(Uint8Array.of(byte));
        controller.close();
      },
    });
    const cut: ServerSentEvent[] = [];
    for await (const event of readEventStream(stream)) cut.push(event);
    expect(cut).toEqual(whole);
  });

  it('joins data lines, ignores comments and empty events, accepts CR and CRLF, and drops an unfinished event', async () => {
    const events = await collect([': keep-alive\r\n\r\nevent: done\r', '\ndata: a\rdata:b\r\n\r\n', 'data: only\n\n', 'event: error\ndata: {"cut":']);
    expect(events).toEqual([
      { event: 'done', data: 'a\nb' },
      { event: 'message', data: 'only' },
    ]);
  });

  it('resets the event name after each dispatch (a positive control: the name is kept within one event)', () => {
    const parser = new EventStreamParser();
    expect(parser.push('event: turn-end\ndata: 1\n\ndata: 2\n\n')).toEqual([
      { event: 'turn-end', data: '1' },
      { event: 'message', data: '2' },
    ]);
  });
});
