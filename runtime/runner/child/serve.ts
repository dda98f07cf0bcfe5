/**
 * A runner process: one function version's pool (its instances, batcher and hook threads), serving
 * the node over the channel on fd 3. It holds no secrets and reads only its own artifacts; the node
 * supervises it (runtime/runner/supervision/runner-pool.ts) and restarts it when it dies or hangs.
 *
 * It exits when the channel closes: a runner never outlives its node.
 */
import { Socket } from 'node:net';

import { CancelledError, InferenceError, toHearthError } from '../../../sdk/errors.js';
import { devices, exitNow, mapArena, prefault, setIntraOpThreads } from '../../engine/index.js';
import type { PoolEvent } from '../../pool/index.js';
import { Pool } from '../../pool/index.js';
import { growHeapsFurther } from '../heap-growth.js';
import type { Frame, FromRunner, RunnerReply, Snapshot, StartMessage, ToRunner } from '../wire/index.js';
import {
  arenaCapBytes,
  Channel,
  decodeToRunner,
  packError,
  packTensors,
  runnerEnd,
  SnapshotSender,
  unpackCall,
  unpackTensors,
} from '../wire/index.js';

/** Heap a spare maps ahead of its first load: about what ResNet-50 (100 MB) needs to load and run. */
const PREFAULT_BYTES = 256 * 2 ** 20;

/**
 * Serves the node from this process, until the channel closes: the runner's whole life. Its entry
 * (../runner-main.ts) calls it once.
 */
export function serveRunner(): void {
  growHeapsFurther();
  const runner = new RunnerChild();
  process.on('uncaughtException', (error) => {
    process.stderr.write(`runner: uncaught ${error.stack ?? error.message}\n`);
    exitNow(70);
  });
  // LibTorch loads now (forked from the runner template, it is loaded already), before the hello;
  // so, in a spare (HEARTH_PREFAULT), do the heap pages its first load and forward will use (engine
  // prefault: ResNet-50's load 107 → 77 ms, its first forward 190 → 175 ms in a new process). A
  // runner started for a cold start that is waiting goes straight to its load.
  const intraOp = Number(process.env.HEARTH_INTRA_OP_THREADS);
  if (intraOp > 0) setIntraOpThreads(intraOp);
  devices();
  if (process.env.HEARTH_PREFAULT) prefault(PREFAULT_BYTES);
  runner.hello();
}

/** The runner's pool and its requests, as the node asks for them on the channel. */
class RunnerChild {
  #pool: Pool | undefined;
  readonly #inflight = new Map<number, AbortController>();
  readonly #channel: Channel<ToRunner, FromRunner>;
  /** The pool's snapshots to the node (while a pool runs). */
  readonly #snapshots: SnapshotSender<Snapshot>;

  constructor() {
    // Requests that arrive in one read are batched together (Pool.gather).
    // The arena its node made for it (runtime/runner/wire/arena.ts), inherited as HEARTH_ARENA_FD.
    const arenaFd = Number(process.env.HEARTH_ARENA_FD);
    this.#channel = new Channel<ToRunner, FromRunner>(
      new Socket({ fd: 3, readable: true, writable: true }),
      decodeToRunner,
      (frame) => void this.#handle(frame),
      () => undefined,
      (deliver) => (this.#pool ? this.#pool.gather(deliver) : deliver()),
      arenaFd > 0 ? runnerEnd(mapArena(arenaFd)) : undefined,
    );
    this.#snapshots = new SnapshotSender(
      () => this.#snapshot(),
      (s) => this.#channel.send({ t: 'snapshot', ...s }),
    );
  }

  /** Says it is up; from now on the node's closing the channel ends it. */
  hello(): void {
    // Its node is gone or done with it: nothing to save, and teardown would wait for any forward
    // still running (a hang) and end hook threads inside their isolates (an abort).
    this.#channel.onClose(() => exitNow(0));
    this.#channel.send({ t: 'hello', pid: process.pid });
  }

  #reply(id: number, answer: RunnerReply, blobs: Uint8Array[] = []): void {
    this.#channel.send({ ...answer, t: 'reply', id }, blobs);
  }

  #fail(id: number, error: unknown): void {
    this.#reply(id, { ok: false, error: packError(toHearthError(error)) });
  }

  #snapshot(): Snapshot {
    const pool = this.#pool!;
    return { stats: pool.stats(), room: pool.room(), device: pool.device };
  }

  async #start(id: number, m: StartMessage): Promise<void> {
    // Hooks run in V8 isolates here: user code sees no Node API, even inside its own runner. This
    // process is the function's own, so a call that finds the pool otherwise idle runs its hook on
    // this thread, in an isolate here (HookPoolOptions.inline): no hop to a hook thread and back.
    this.#channel.capArena(arenaCapBytes(m.spec.limits.runnerMemoryMb));
    const pool = new Pool({
      spec: m.spec,
      version: m.version,
      model: m.model,
      hookBundle: m.hookBundle,
      hooks: { sandbox: true, inline: true, ...(m.secrets ? { secrets: m.secrets } : {}) },
      waitingOutside: m.waiting,
      ownProcess: true,
    });
    this.#pool = pool;
    pool.on('event', (event: PoolEvent) => {
      this.#channel.send({ t: 'event', event });
      // The node's copy of the pool's figures is taken as current while nothing was asked of it.
      this.#snapshots.now();
    });
    pool.on('hung', (detail: { rows: number; limitMs: number }) => {
      // The node kills this process on `hung`; should the message not get out, it goes anyway (by
      // _exit: as pid 1 of its namespace, a signal it sent itself would be ignored).
      this.#channel.send({ t: 'hung', ...detail });
      setTimeout(() => exitNow(137), 2000).unref();
    });
    await pool.start();
    this.#snapshots.start();
    this.#reply(id, { ok: true, coldStart: pool.stats().coldStart, ...this.#snapshot() });
  }

  /**
   * A call, its reply once the pool answers. Its blobs may be views of the arena: given back as soon
   * as the pool is done with them (the reply carries the release to the node).
   */
  async #call(
    message: Extract<ToRunner, { t: 'invoke' | 'infer' }>,
    blobs: Uint8Array[],
    release: () => void,
  ): Promise<void> {
    const { id } = message;
    const pool = this.#pool;
    if (!pool) {
      release();
      return this.#fail(id, new InferenceError('the runner has no function loaded'));
    }
    const controller = new AbortController();
    this.#inflight.set(id, controller);
    const options = unpackCall(message, controller.signal);
    try {
      if (message.t === 'invoke') {
        // The body as it lies (in the arena, mostly), held until the reply: the hooks copy what
        // they keep (into the isolate, or to a thread), so no buffer of its own is made here.
        const body = blobs[0] ?? new Uint8Array();
        const r = await pool.invoke({ body, contentType: message.contentType }, options);
        // Given back with the reply (in its write), unless the answer is the body itself.
        const echoed = r.body.buffer === body.buffer;
        if (!echoed) release();
        this.#reply(id, { ok: true, contentType: r.contentType }, [r.body]);
        if (echoed) release();
      } else {
        const out: Uint8Array[] = [];
        const outputs = await pool.infer(unpackTensors(message.tensors, blobs), options);
        release();
        const tensors = packTensors(outputs, out);
        this.#reply(id, { ok: true, tensors }, out);
      }
    } catch (error) {
      release();
      this.#fail(id, error);
    } finally {
      this.#inflight.delete(id);
    }
  }

  async #handle({ header: message, blobs, release = () => undefined }: Frame<ToRunner>): Promise<void> {
    // Work for the pool brings the 250 ms snapshots back; a read of its stats (the node's API, a
    // console polling it) is not work.
    if (message.t !== 'stats') this.#snapshots.wake();
    // Notices have no reply (a cancel names its request); a failure answers a request's id.
    const id = 'id' in message ? message.id : 0;
    try {
      switch (message.t) {
        case 'start':
          return await this.#start(message.id, message);
        case 'invoke':
        case 'infer':
          return await this.#call(message, blobs, release);
        case 'cancel':
          this.#inflight.get(message.id)?.abort(new CancelledError('the request was cancelled'));
          return;
        case 'add':
          this.#pool?.addInstance();
          return this.#channel.send({ t: 'snapshot', ...this.#snapshot() });
        case 'remove':
          this.#pool?.removeInstance();
          return this.#channel.send({ t: 'snapshot', ...this.#snapshot() });
        case 'stats':
          return this.#reply(message.id, { ok: true, ...this.#snapshot() });
        case 'drain':
          this.#snapshots.stop();
          await this.#pool?.drain();
          return this.#reply(id, { ok: true, stats: this.#pool?.stats() });
        case 'stop': {
          // The pool ends; the process may be parked to serve the same version again (start anew).
          this.#snapshots.stop();
          const stopped = this.#pool;
          this.#pool = undefined;
          await stopped?.stop();
          return this.#reply(id, { ok: true, stats: stopped?.stats() });
        }
      }
    } catch (error) {
      if (message.t !== 'add' && message.t !== 'remove' && message.t !== 'cancel') this.#fail(id, error);
    }
  }
}
