/**
 * A runner process: one function version's pool (its instances, batcher and hook threads), serving
 * the node over the channel on fd 3. It holds no secrets and reads only its own artifacts; the node
 * supervises it (runtime/runner/runner-pool.ts) and restarts it when it dies or hangs.
 *
 * It exits when the channel closes: a runner never outlives its node.
 */
import { Socket } from 'node:net';

import { CancelledError, InferenceError, toHearthError } from '../../sdk/errors.js';
import { devices, exitNow, mapArena, prefault, setIntraOpThreads } from '../engine/index.js';
import type { PoolEvent } from '../pool/index.js';
import { Pool } from '../pool/index.js';
import { arenaCapBytes, runnerEnd } from './arena.js';
import type { Frame } from './channel.js';
import { Channel } from './channel.js';
import type { FromRunner, RunnerReply, Snapshot, StartMessage, ToRunner } from './protocol.js';
import { decodeToRunner, packError, packTensors, unpackCall, unpackTensors } from './protocol.js';
import { SnapshotSender } from './snapshots.js';

/** Heap a spare maps ahead of its first load: about what ResNet-50 (100 MB) needs to load and run. */
const PREFAULT_BYTES = 256 * 2 ** 20;

let pool: Pool | undefined;
const inflight = new Map<number, AbortController>();
// Requests that arrive in one read are batched together (Pool.gather).
// The arena its node made for it (runtime/runner/arena.ts), inherited as HEARTH_ARENA_FD.
const arenaFd = Number(process.env.HEARTH_ARENA_FD);
const channel = new Channel<ToRunner, FromRunner>(
  new Socket({ fd: 3, readable: true, writable: true }),
  decodeToRunner,
  (frame) => void handle(frame),
  () => undefined,
  (deliver) => (pool ? pool.gather(deliver) : deliver()),
  arenaFd > 0 ? runnerEnd(mapArena(arenaFd)) : undefined,
);

process.on('uncaughtException', (error) => {
  process.stderr.write(`runner: uncaught ${error.stack ?? error.message}\n`);
  exitNow(70);
});

function reply(id: number, answer: RunnerReply, blobs: Uint8Array[] = []): void {
  channel.send({ ...answer, t: 'reply', id }, blobs);
}

function fail(id: number, error: unknown): void {
  reply(id, { ok: false, error: packError(toHearthError(error)) });
}

function snapshot(): Snapshot {
  return { stats: pool!.stats(), room: pool!.room(), device: pool!.device };
}

/** The pool's snapshots to the node (while a pool runs). */
const snapshots = new SnapshotSender(snapshot, (s) => channel.send({ t: 'snapshot', ...s }));

async function start(id: number, m: StartMessage): Promise<void> {
  // Hooks run in V8 isolates here: user code sees no Node API, even inside its own runner. This
  // process is the function's own, so a call that finds the pool otherwise idle runs its hook on
  // this thread, in an isolate here (HookPoolOptions.inline): no hop to a hook thread and back.
  channel.capArena(arenaCapBytes(m.spec.limits.runnerMemoryMb));
  pool = new Pool({
    spec: m.spec,
    version: m.version,
    model: m.model,
    hookBundle: m.hookBundle,
    hooks: { sandbox: true, inline: true, ...(m.secrets ? { secrets: m.secrets } : {}) },
    waitingOutside: m.waiting,
    ownProcess: true,
  });
  pool.on('event', (event: PoolEvent) => {
    channel.send({ t: 'event', event });
    // The node's copy of the pool's figures is taken as current while nothing was asked of it.
    snapshots.now();
  });
  pool.on('hung', (detail: { rows: number; limitMs: number }) => {
    // The node kills this process on `hung`; should the message not get out, it goes anyway (by
    // _exit: as pid 1 of its namespace, a signal it sent itself would be ignored).
    channel.send({ t: 'hung', ...detail });
    setTimeout(() => exitNow(137), 2000).unref();
  });
  await pool.start();
  snapshots.start();
  reply(id, { ok: true, coldStart: pool.stats().coldStart, ...snapshot() });
}

/**
 * A call, its reply once the pool answers. Its blobs may be views of the arena: given back as soon
 * as the pool is done with them (the reply carries the release to the node), and a body for the
 * hooks is first copied out (a hook thread may take it by transfer).
 */
async function call(
  message: Extract<ToRunner, { t: 'invoke' | 'infer' }>,
  blobs: Uint8Array[],
  release: () => void,
): Promise<void> {
  const { id } = message;
  if (!pool) {
    release();
    return fail(id, new InferenceError('the runner has no function loaded'));
  }
  const controller = new AbortController();
  inflight.set(id, controller);
  const options = unpackCall(message, controller.signal);
  try {
    if (message.t === 'invoke') {
      const body = blobs[0] ? blobs[0].slice() : new Uint8Array();
      release();
      const r = await pool.invoke({ body, contentType: message.contentType }, options);
      reply(id, { ok: true, contentType: r.contentType }, [r.body]);
    } else {
      const out: Uint8Array[] = [];
      const outputs = await pool.infer(unpackTensors(message.tensors, blobs), options);
      release();
      const tensors = packTensors(outputs, out);
      reply(id, { ok: true, tensors }, out);
    }
  } catch (error) {
    release();
    fail(id, error);
  } finally {
    inflight.delete(id);
  }
}

async function handle({ header: message, blobs, release = () => undefined }: Frame<ToRunner>): Promise<void> {
  // Work for the pool brings the 250 ms snapshots back; a read of its stats (the node's API, a
  // console polling it) is not work.
  if (message.t !== 'stats') snapshots.wake();
  // Notices have no reply (a cancel names its request); a failure answers a request's id.
  const id = 'id' in message ? message.id : 0;
  try {
    switch (message.t) {
      case 'start':
        return await start(message.id, message);
      case 'invoke':
      case 'infer':
        return await call(message, blobs, release);
      case 'cancel':
        inflight.get(message.id)?.abort(new CancelledError('the request was cancelled'));
        return;
      case 'add':
        pool?.addInstance();
        return channel.send({ t: 'snapshot', ...snapshot() });
      case 'remove':
        pool?.removeInstance();
        return channel.send({ t: 'snapshot', ...snapshot() });
      case 'stats':
        return reply(message.id, { ok: true, ...snapshot() });
      case 'drain':
        snapshots.stop();
        await pool?.drain();
        return reply(id, { ok: true, stats: pool?.stats() });
      case 'stop': {
        // The pool ends; the process may be parked to serve the same version again (start anew).
        snapshots.stop();
        const stopped = pool;
        pool = undefined;
        await stopped?.stop();
        return reply(id, { ok: true, stats: stopped?.stats() });
      }
    }
  } catch (error) {
    if (message.t !== 'add' && message.t !== 'remove' && message.t !== 'cancel') fail(id, error);
  }
}

// LibTorch loads now, while this runner waits as the spare, not during a cold start; so do the
// heap pages its first load and forward will use (engine prefault: ResNet-50's load 107 → 77 ms,
// its first forward 190 → 175 ms in a new process).
const intraOp = Number(process.env.HEARTH_INTRA_OP_THREADS);
if (intraOp > 0) setIntraOpThreads(intraOp);
devices();
prefault(PREFAULT_BYTES);

// Its node is gone or done with it: nothing to save, and teardown would wait for any forward still
// running (a hang) and end hook threads inside their isolates (an abort).
channel.onClose(() => exitNow(0));
channel.send({ t: 'hello', pid: process.pid });
