// The channel over a real socket: frames across, and the other end dying mid-stream.
import { createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { connect } from 'node:net';

import { describe, expect, it } from 'vitest';

import { Channel } from './channel.js';
import type { Frame } from './channel.js';

/** A connected pair of TCP sockets on loopback (TCP, so one end can be reset as a crash resets it). */
async function pair(): Promise<{ ours: Socket; theirs: Socket; close(): void }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  const ours = connect((server.address() as AddressInfo).port, '127.0.0.1');
  await new Promise<void>((resolve) => ours.once('connect', resolve));
  return { ours, theirs: await accepted, close: () => server.close() };
}

/** A codec that takes any header as it is (the channel's framing is what these tests are about). */
const asIs = <M>(header: unknown) => header as M;

describe('the runner channel', () => {
  it('carries frames with their blobs, in order', async () => {
    const { ours, theirs, close } = await pair();
    type Message = { t: string; id: number };
    const got: Frame<Message>[] = [];
    const arrived = new Promise<void>((resolve) => {
      new Channel<Message, Message>(ours, asIs, (frame) => {
        got.push(frame);
        if (got.length === 2) resolve();
      });
    });
    const sender = new Channel<Message, Message>(theirs, asIs, () => undefined);
    sender.send({ t: 'a', id: 1 }, [Uint8Array.of(1, 2, 3)]);
    sender.send({ t: 'b', id: 2 });
    await arrived;
    expect(got.map((f) => f.header)).toEqual([
      { t: 'a', id: 1 },
      { t: 'b', id: 2 },
    ]);
    expect(Array.from(got[0]!.blobs[0]!)).toEqual([1, 2, 3]);
    ours.destroy();
    theirs.destroy();
    close();
  });

  it('hands a frame its codec refuses to onMalformed, and reads nothing after it', async () => {
    const { ours, theirs, close } = await pair();
    const got: unknown[] = [];
    const malformed = new Promise<string>((resolve) => {
      new Channel<{ t: 'ok' }, { t: string }>(
        ours,
        (header) => {
          if ((header as { t?: unknown }).t !== 'ok') throw new Error('not ok');
          return header as { t: 'ok' };
        },
        (frame) => got.push(frame.header),
        resolve,
      );
    });
    const sender = new Channel<{ t: string }, { t: string }>(theirs, asIs, () => undefined);
    sender.send({ t: 'ok' });
    sender.send({ t: 'evil' });
    sender.send({ t: 'ok' });
    expect(await malformed).toBe('not ok');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(got).toEqual([{ t: 'ok' }]);
    ours.destroy();
    theirs.destroy();
    close();
  });

  it('survives the other end dying mid-frame (ECONNRESET) with no one listening for its end', async () => {
    const { ours, theirs, close } = await pair();
    // The node's side of a runner: frames only; the runner's exit, not the socket, says it ended.
    new Channel(ours, asIs, () => undefined);
    const closed = new Promise<boolean>((resolve) => ours.once('close', resolve));
    // Half a frame, then a reset, as a runner that aborts while it writes leaves its socket.
    theirs.write(Buffer.from([200, 0, 0, 0, 1]));
    ours.write('unread bytes on their side make the close a reset');
    await new Promise((resolve) => setTimeout(resolve, 50));
    theirs.resetAndDestroy();
    // It closed with an error (the reset), and the error reached no one: nothing was thrown.
    expect(await closed).toBe(true);
    close();
  });
});
