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

describe('the runner channel', () => {
  it('carries frames with their blobs, in order', async () => {
    const { ours, theirs, close } = await pair();
    const got: Frame[] = [];
    const arrived = new Promise<void>((resolve) => {
      new Channel(ours, (frame) => {
        got.push(frame);
        if (got.length === 2) resolve();
      });
    });
    const sender = new Channel(theirs, () => undefined);
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

  it('survives the other end dying mid-frame (ECONNRESET) with no one listening for its end', async () => {
    const { ours, theirs, close } = await pair();
    // The node's side of a runner: frames only; the runner's exit, not the socket, says it ended.
    new Channel(ours, () => undefined);
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
