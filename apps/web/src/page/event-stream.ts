/** One server-sent event: its name (`message` when the server gave none) and its data lines joined. */
export interface ServerSentEvent {
  event: string;
  data: string;
}

/**
 * Parse a `text/event-stream` body as it arrives (the WHATWG rules: lines end
 * in CR, LF or CRLF, `data:` lines join with a newline, a blank line
 * dispatches, a line starting with `:` is a comment). An event cut off by the
 * end of the stream is dropped, as a browser's EventSource drops it.
 */
export async function* readEventStream(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = new EventStreamParser();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      // `stream: true` keeps a character cut between two chunks for the next one.
      yield* parser.push(decoder.decode(value, { stream: true }));
    }
  } finally {
    reader.releaseLock();
  }
}

/** The incremental parser behind `readEventStream`, fed text chunks in order. */
export class EventStreamParser {
  private buffer = '';
  private event = '';
  private data: string[] = [];
  private started = false;

  /** Feed a chunk; returns the events it completed. */
  push(chunk: string): ServerSentEvent[] {
    let text = this.buffer + chunk;
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.startsWith('\uFEFF')) text = text.slice(1);
    }
    const events: ServerSentEvent[] = [];
    let start = 0;
    for (let index = 0; index < text.length; index += 1) {
      const character = text[index];
      if (character !== '\n' && character !== '\r') continue;
      // A CR at the very end may be the first half of a CRLF: wait for the next chunk.
      if (character === '\r' && index === text.length - 1) break;
      const line = text.slice(start, index);
      if (character === '\r' && text[index + 1] === '\n') index += 1;
      start = index + 1;
      const event = this.line(line);
      if (event !== null) events.push(event);
    }
    this.buffer = text.slice(start);
    return events;
  }

  private line(line: string): ServerSentEvent | null {
    if (line === '') {
      if (this.data.length === 0) {
        this.event = '';
        return null;
      }
      const event = { event: this.event === '' ? 'message' : this.event, data: this.data.join('\n') };
      this.event = '';
      this.data = [];
      return event;
    }
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'event') this.event = value;
    else if (name === 'data') this.data.push(value);
    return null;
  }
}
