/**
 * A reader of server-sent events (the WHATWG text/event-stream format): the management API's
 * log follow. One parser for the SDK's client (Node) and the console (a browser): it imports
 * nothing, and reads any stream of bytes.
 */

export interface ServerSentEvent {
  /** The `event:` field; `message` where the event names none. */
  event: string;
  /** The `data:` lines, joined by newlines. */
  data: string;
  id?: string;
}

/**
 * The events of a stream, each as its blank line ends it. Comments (`: keep-alive`) and events
 * without data are skipped; an event the stream ends in the middle of is dropped, as a browser's
 * EventSource drops it.
 */
export async function* readEvents(
  body: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>,
): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let buffered = '';
  let event: { event?: string; data: string[]; id?: string } = { data: [] };
  for await (const chunk of chunks(body)) {
    buffered += decoder.decode(chunk, { stream: true });
    // A trailing \r may be the first half of a \r\n: it waits for the next chunk.
    const cut = buffered.endsWith('\r') ? buffered.length - 1 : buffered.length;
    const lines = buffered.slice(0, cut).split(/\r\n|\r|\n/);
    // The last piece is a line that is not whole yet.
    buffered = (lines.pop() ?? '') + buffered.slice(cut);
    for (const line of lines) {
      if (line === '') {
        if (event.data.length > 0)
          yield { event: event.event ?? 'message', data: event.data.join('\n'), ...(event.id ? { id: event.id } : {}) };
        event = { data: [] };
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'data') event.data.push(value);
      else if (field === 'event') event.event = value;
      else if (field === 'id') event.id = value;
    }
  }
}

async function* chunks(body: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  if (Symbol.asyncIterator in body) {
    yield* body as AsyncIterable<Uint8Array>;
    return;
  }
  // A browser's ReadableStream may not be async-iterable (Safari): read it by hand.
  const reader = (body as ReadableStream<Uint8Array>).getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}
