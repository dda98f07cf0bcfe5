// The channel over a real socket: frames across, and the other end dying mid-stream.

import type { AddressInfo, Socket } from 'node:net';
import { connect, createServer } from 'node:net';

import { describe, expect, it } from 'vitest';

import { nodeEnd, runnerEnd } from './arena.js';
import type { Frame } from './channel.js';
import { Channel } from './channel.js';

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

  it('sends the frames of a whole event-loop turn in one write where it is not eager (the other end is busy)', async () => {
    const { ours, theirs, close } = await pair();
    type Message = { t: string };
    const reads: string[][] = [];
    let current: string[] | undefined;
    const all = new Promise<void>((resolve) => {
      new Channel<Message, Message>(
        ours,
        asIs,
        (frame) => {
          current!.push(frame.header.t);
          if (reads.flat().length === 3) resolve();
        },
        undefined,
        (deliver) => {
          current = [];
          reads.push(current);
          deliver();
        },
      );
    });
    const sender = new Channel<Message, Message>(theirs, asIs, () => undefined);
    sender.eager = () => false;
    // Three ticks of one turn: the frame, a nextTick after it, a timer-free microtask after that.
    sender.send({ t: 'a' });
    process.nextTick(() => {
      sender.send({ t: 'b' });
      queueMicrotask(() => sender.send({ t: 'c' }));
    });
    await all;
    expect(reads).toEqual([['a', 'b', 'c']]);
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

  it('refuses a frame longer than maxFrameBytes by its length, before gathering its bytes', async () => {
    const { ours, theirs, close } = await pair();
    const got: string[] = [];
    const why = new Promise<string>((resolve) => {
      const receiver = new Channel<{ t: string }, { t: string }>(
        ours,
        asIs,
        (frame) => got.push(frame.header.t),
        resolve,
      );
      receiver.maxFrameBytes = 4096;
    });
    const sender = new Channel<{ t: string }, { t: string }>(theirs, asIs, () => undefined);
    sender.send({ t: 'small' }, [new Uint8Array(1000)]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Only a length is sent: it alone is refused, with none of the 400 MB it names ever arriving.
    const head = Buffer.alloc(8);
    head.writeUInt32LE(400_000_000, 0);
    theirs.write(head);
    expect(await why).toMatch(/a frame of 400000000 bytes, past 4096/);
    expect(got).toEqual(['small']);
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

  describe('with an arena', () => {
    type Message = { t: string; id?: number };
    /** A node end and a runner end over one buffer (the two mappings of one memfd, in one process). */
    async function ends(bytes = 1 << 20) {
      const { ours, theirs, close } = await pair();
      const buffer = new ArrayBuffer(bytes);
      const node = nodeEnd(buffer);
      const runner = runnerEnd(buffer);
      const atNode: Frame<Message>[] = [];
      const atRunner: Frame<Message>[] = [];
      const malformed: string[] = [];
      const nodeChannel = new Channel<Message, Message>(
        ours,
        asIs,
        (f) => atNode.push(f),
        (why) => malformed.push(why),
        undefined,
        node,
      );
      const runnerChannel = new Channel<Message, Message>(
        theirs,
        asIs,
        (f) => atRunner.push(f),
        undefined,
        undefined,
        runner,
      );
      const until = async (ok: () => boolean) => {
        // Up to 10 s: a loaded machine may take long to turn the loop; a pass takes a few ms.
        for (let i = 0; i < 2000 && !ok(); i++) await new Promise((r) => setTimeout(r, 5));
        expect(ok()).toBe(true);
      };
      const end = () => {
        ours.destroy();
        theirs.destroy();
        close();
      };
      return { buffer, node, runner, nodeChannel, runnerChannel, atNode, atRunner, malformed, until, theirs, end };
    }
    /** A frame as a hostile runner may write one: any header, no blobs after it. */
    const rawFrame = (header: unknown): Buffer => {
      const json = Buffer.from(JSON.stringify(header));
      const frame = Buffer.alloc(64 + Math.ceil(json.length / 64) * 64);
      frame.writeUInt32LE(frame.length - 4, 0);
      frame.writeUInt32LE(json.length, 4);
      json.copy(frame, 8);
      return frame;
    };
    const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 7 + seed) & 0xff);

    it('carries large blobs in the arena, viewed in place by the runner and copied out by the node, and frees them when each is done', async () => {
      const c = await ends();
      const request = bytes(64 * 1024, 1);
      const small = bytes(100, 2);
      c.nodeChannel.send({ t: 'call', id: 1 }, [request, small]);
      // Written into the node's half at once.
      expect(c.node.out.used).toBe(64 * 1024);
      await c.until(() => c.atRunner.length === 1);
      const [inArena, onSocket] = c.atRunner[0]!.blobs;
      expect(inArena!.buffer).toBe(c.buffer);
      expect(inArena!.byteOffset).toBeLessThan(c.node.out.to);
      expect(inArena).toEqual(request);
      expect(onSocket!.buffer).not.toBe(c.buffer);
      expect(onSocket).toEqual(small);
      // The runner is done with it; its reply carries the release, and a response in its own half.
      const response = bytes(8 * 1024, 3);
      c.atRunner[0]!.release!();
      c.runnerChannel.send({ t: 'reply', id: 1 }, [response]);
      expect(c.runner.out.used).toBe(8 * 1024);
      await c.until(() => c.atNode.length === 1);
      expect(c.node.out.used).toBe(0);
      const got = c.atNode[0]!.blobs[0]!;
      // The node never holds a view the runner could rewrite under it.
      expect(got.buffer).not.toBe(c.buffer);
      expect(got).toEqual(response);
      // The node's release rides within a few ms, or ahead of its next frame.
      await c.until(() => c.runner.out.used === 0);
      c.end();
    });

    it('sends a blob on the socket when its half has no room, and the bytes arrive the same', async () => {
      const c = await ends(256 * 1024);
      const blobs = [bytes(100 * 1024, 4), bytes(100 * 1024, 5)];
      c.nodeChannel.send({ t: 'call', id: 1 }, blobs);
      expect(c.node.out.used).toBe(100 * 1024);
      await c.until(() => c.atRunner.length === 1);
      const got = c.atRunner[0]!.blobs;
      expect(got[0]!.buffer).toBe(c.buffer);
      expect(got[1]!.buffer).not.toBe(c.buffer);
      expect(got).toEqual(blobs);
      c.end();
    });

    it('writes a blob given as parts once, joined, into the arena or onto the socket', async () => {
      const c = await ends(256 * 1024);
      // Parts of odd sizes, so a part written at a padded offset would shift the rest.
      const parts = [bytes(1000, 1), bytes(3, 2), bytes(70 * 1024 + 5, 3)];
      const joined = Buffer.concat(parts);
      // The second frame finds the half full: its parts go on the socket, and a blob after them still lines up.
      const big = [bytes(100 * 1024, 4), bytes(100 * 1024, 5)];
      c.nodeChannel.send({ t: 'call', id: 1 }, [parts, bytes(10, 6)]);
      c.nodeChannel.send({ t: 'call', id: 2 }, [big[0]!, [big[1]!, ...parts], bytes(10, 7)]);
      await c.until(() => c.atRunner.length === 2);
      const [one, two] = c.atRunner.map((f) => f.blobs);
      expect(one![0]!.buffer).toBe(c.buffer);
      expect(Buffer.from(one![0]!)).toEqual(joined);
      expect(one![1]).toEqual(bytes(10, 6));
      expect(two![1]!.buffer).not.toBe(c.buffer);
      expect(Buffer.from(two![1]!)).toEqual(Buffer.concat([big[1]!, ...parts]));
      expect(two![2]).toEqual(bytes(10, 7));
      c.end();
    });

    it('sends a blob on the socket past the cap on what its end may hold in the arena', async () => {
      const c = await ends();
      c.nodeChannel.capArena(8 * 1024);
      const blobs = [bytes(6 * 1024, 7), bytes(6 * 1024, 8)];
      c.nodeChannel.send({ t: 'call', id: 1 }, blobs);
      await c.until(() => c.atRunner.length === 1);
      const got = c.atRunner[0]!.blobs;
      expect([got[0]!.buffer === c.buffer, got[1]!.buffer === c.buffer]).toEqual([true, false]);
      expect(got).toEqual(blobs);
      c.end();
    });

    it("refuses a runner's frame naming bytes outside the runner's half (the node's requests, or past the end)", async () => {
      for (const at of [
        [0, 1024],
        [(1 << 19) - 64, 1024],
        [(1 << 20) - 64, 128],
        [(1 << 19) + 1, 64],
        [-64, 64],
        ['x', 1],
      ]) {
        const c = await ends();
        // A hostile runner writes its own header: its blob names the node's half.
        c.theirs.write(rawFrame({ t: 'reply', id: 1, b: [at] }));
        await c.until(() => c.malformed.length === 1);
        expect(c.malformed[0]).toMatch(/outside its half of the arena/);
        expect(c.atNode).toEqual([]);
        c.end();
      }
    });

    it('refuses a frame naming more bytes of the arena than its half holds (the same extent, again and again)', async () => {
      const c = await ends();
      const half = c.node.in.to - c.node.in.from;
      const at = c.node.in.from;
      c.theirs.write(
        rawFrame({
          t: 'reply',
          id: 1,
          b: [
            [at, half],
            [at, 64],
          ],
        }),
      );
      await c.until(() => c.malformed.length === 1);
      expect(c.malformed[0]).toMatch(/more than its half/);
      expect(c.atNode).toEqual([]);
      c.end();
    });

    it("ignores a runner's release of extents the node never gave it, and frees each real one once", async () => {
      const c = await ends();
      c.nodeChannel.send({ t: 'call', id: 1 }, [bytes(4096, 6)]);
      await c.until(() => c.atRunner.length === 1);
      const at = c.atRunner[0]!.blobs[0]!.byteOffset;
      c.theirs.write(rawFrame({ t: '~freed', at: [at + 64, 123, at, at] }));
      await c.until(() => c.node.out.used === 0);
      expect(c.malformed).toEqual([]);
      c.end();
    });
  });
});
