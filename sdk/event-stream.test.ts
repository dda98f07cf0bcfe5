import { describe, expect, it } from 'vitest';

import { readEvents } from './event-stream.js';

async function all(chunks: string[]): Promise<{ event: string; data: string; id?: string }[]> {
  const bytes = new TextEncoder();
  async function* source() {
    for (const c of chunks) yield bytes.encode(c);
  }
  const out = [];
  for await (const e of readEvents(source())) out.push(e);
  return out;
}

describe('readEvents', () => {
  it('reads events as the blank line ends them, skipping comments, across any chunking', async () => {
    const text = 'event: log\ndata: {"a":1}\n\n: keep-alive\n\ndata: one\ndata: two\nid: 7\n\nevent: log\ndata:x\n\n';
    const expected = [
      { event: 'log', data: '{"a":1}' },
      { event: 'message', data: 'one\ntwo', id: '7' },
      { event: 'log', data: 'x' },
    ];
    expect(await all([text])).toEqual(expected);
    // Every split point, one byte at a time, and with CRLF line ends split between \r and \n.
    expect(await all([...text])).toEqual(expected);
    const crlf = text.replaceAll('\n', '\r\n');
    for (let i = 1; i < crlf.length; i++) expect(await all([crlf.slice(0, i), crlf.slice(i)])).toEqual(expected);
  });

  it('drops an event the stream ends inside, and reads a browser ReadableStream', async () => {
    expect(await all(['data: whole\n\ndata: cut'])).toEqual([{ event: 'message', data: 'whole' }]);
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('event: log\ndata: 1\n\n'));
        c.close();
      },
    });
    // As a browser without async-iterable streams hands it over: only getReader().
    const bare = { getReader: () => stream.getReader() } as unknown as ReadableStream<Uint8Array>;
    const seen = [];
    for await (const e of readEvents(bare)) seen.push(e);
    expect(seen).toEqual([{ event: 'log', data: '1' }]);
  });
});
