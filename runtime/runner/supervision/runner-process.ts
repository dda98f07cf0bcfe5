/**
 * One runner child process, seen from the node: its channel, its requests by id, its exit, the
 * last lines it logged, and a watch on its resident memory.
 */
import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { Socket } from 'node:net';

import { UnavailableError } from '../../../sdk/errors.js';
import type { ColdStart } from '../../pool/index.js';
import type { JailReport, RunnerCgroup } from '../walls/index.js';
import type {
  Asked,
  Failed,
  Frame,
  FromRunner,
  Notice,
  OutBlob,
  Reply,
  ReplyFrame,
  Request,
  ToRunner,
} from '../wire/index.js';
import { Channel, decodeFromRunner, nodeEnd, readReply } from '../wire/index.js';
import { readOutput } from './runner-output.js';

export interface RunnerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Why the node killed it (hang, memory), when it did. */
  killedFor?: string;
  /** Its last lines on stdout/stderr. */
  lastLines: string[];
}

const PAGE = 4096;

/** Resident bytes of a process (Linux /proc), or undefined when it is gone. */
async function residentBytes(pid: number): Promise<number | undefined> {
  const statm = await readFile(`/proc/${pid}/statm`, 'latin1').catch(() => undefined);
  return statm === undefined ? undefined : Number(statm.split(' ')[1]) * PAGE;
}

/** The reply a request gets when its runner cannot answer it (`unanswered`: no runner counted it). */
function unanswered(id: number, message: string): Failed {
  const gone = new UnavailableError(message);
  return { t: 'reply', id, ok: false, unanswered: true, error: { code: gone.code, error: gone.message } };
}

/** Messages a runner sends unasked. */
export type RunnerMessage = Exclude<FromRunner, { t: 'reply' | 'hello' | 'jail' }>;

/**
 * A request's waiter: `check` reads a reply as the answer to the request it made (throwing if it is
 * malformed) and gives back its delivery; `fail` answers it without its runner.
 */
interface Waiter {
  check: (frame: ReplyFrame, blobs: Uint8Array[]) => () => void;
  fail: (failed: Failed) => void;
}

export class RunnerProcess {
  readonly child: ChildProcess;
  /** The directory holding this runner's artifacts (the only files of a function it may read). */
  readonly dir: string;
  readonly exited: Promise<RunnerExit>;
  readonly ready: Promise<void>;
  readonly #channel: Channel<FromRunner, ToRunner>;
  readonly #waiting = new Map<number, Waiter>();
  readonly #lines: string[] = [];
  #nextId = 1;
  #killedFor: string | undefined;
  #memoryTimer: NodeJS.Timeout | undefined;
  #memoryLimit = 0;
  #alive = true;
  #hello: () => void = () => undefined;
  #jailed: (report: JailReport) => void = () => undefined;
  /** What hearth-jail applied (its first frame), when the runner is jailed. */
  jail: JailReport | undefined;
  /** Resolves with the jail's report (a jailed runner sends it before its program starts). */
  readonly jailed: Promise<JailReport>;
  /** Its memory and pids cgroup, where the node made one. */
  readonly cgroup: RunnerCgroup | undefined;
  /** Settles once its folder and cgroup are removed, after it ends (set by its host). */
  cleaned: Promise<void> = Promise.resolve();
  /** The function version it serves (`name@version`), once it has one. */
  label: string | undefined;
  /** Its start, performance.now() ms: spawned, jail applied (its report), up (its hello); and how. */
  readonly start: { at: number; jailedAt?: number; upAt?: number; forked?: boolean } = { at: performance.now() };
  /** Frames the runner sends unasked (events, snapshots, hangs). */
  onMessage: (message: RunnerMessage) => void = () => undefined;

  /** `arena`: the node's mapping of the runner's shared memory (../wire/arena.ts), where it has one. */
  constructor(
    child: ChildProcess,
    dir: string,
    onLine: (line: string) => void,
    cgroup?: RunnerCgroup,
    arena?: ArrayBuffer,
  ) {
    this.child = child;
    this.dir = dir;
    this.cgroup = cgroup;
    // A runner alone does not keep the node alive (a spare waits with nothing to do); the channel
    // does while replies are awaited.
    child.unref();
    readOutput(child, this.#lines, onLine);
    this.ready = new Promise((resolve) => {
      this.#hello = resolve;
    });
    this.jailed = new Promise((resolve) => {
      this.#jailed = resolve;
    });
    this.#channel = new Channel<FromRunner, ToRunner>(
      child.stdio[3] as Socket,
      decodeFromRunner,
      (frame) => this.#receive(frame),
      (why) => this.kill(`it sent a malformed frame (${why.slice(0, 200)})`),
      undefined,
      arena && nodeEnd(arena),
    );
    // A request to an idle runner leaves at once; beside others in flight, with its turn's others.
    this.#channel.eager = () => this.#waiting.size <= 1;
    this.exited = this.#watchExit(child);
    // A runner that dies before its hello never becomes ready; whoever waits on `ready` races `exited`.
  }

  /** A frame from the runner: its jail's report, its hello, a reply to a request, or a message unasked. */
  #receive({ header, blobs }: Frame<FromRunner>): void {
    switch (header.t) {
      case 'jail': {
        const { t, ...report } = header;
        this.jail = report;
        this.start.jailedAt = performance.now();
        this.#jailed(report);
        return;
      }
      case 'hello':
        if (this.#waiting.size === 0) this.#channel.hold(false);
        this.start.upAt = performance.now();
        this.#hello();
        return;
      case 'reply':
        this.#answer(header, blobs);
        return;
      default:
        this.onMessage(header);
    }
  }

  /** A reply, to the request that waits for it (a malformed one ends the runner). */
  #answer(header: ReplyFrame, blobs: Uint8Array[]): void {
    const waiter = this.#waiting.get(header.id);
    if (!waiter) return;
    this.#waiting.delete(header.id);
    if (this.#waiting.size === 0) this.#channel.hold(false);
    let deliver: () => void;
    try {
      deliver = waiter.check(header, blobs);
    } catch (error) {
      waiter.fail(unanswered(header.id, `${this.label ?? 'the function'}: its runner answered malformed`));
      this.kill(`it sent a malformed reply (${(error as Error).message.slice(0, 200)})`);
      return;
    }
    deliver();
  }

  /** Its exit, once it ends (or could not start): what it held is answered without it. */
  #watchExit(child: ChildProcess): Promise<RunnerExit> {
    return new Promise((resolve) => {
      const ended = async (code: number | null, signal: NodeJS.Signals | null): Promise<void> => {
        if (!this.#alive) return;
        this.#alive = false;
        clearInterval(this.#memoryTimer);
        this.#channel.close();
        // Killed by the kernel at its cgroup's memory cap (its tmpfs files count there, not in RSS).
        if (signal === 'SIGKILL' && !this.#killedFor && this.#memoryLimit > 0 && (await this.cgroup?.oomKills()))
          this.#killedFor = `its memory (heap and page cache, its files in /tmp and /dev/shm too) went past its ${(this.#memoryLimit / 2 ** 20).toFixed(0)} MiB limit (limits.runnerMemoryMb)`;
        const exit: RunnerExit = {
          code,
          signal,
          lastLines: [...this.#lines],
          ...(this.#killedFor ? { killedFor: this.#killedFor } : {}),
        };
        const gone = `${this.label ?? 'the function'}: its runner process ended (${describeExit(exit)}) while it held this request; it restarts`;
        for (const [id, waiter] of this.#waiting) waiter.fail(unanswered(id, gone));
        this.#waiting.clear();
        resolve(exit);
      };
      child.once('exit', (code, signal) => void ended(code, signal));
      // A process that could not be started at all (its program missing) has no exit to wait for.
      child.once('error', (error) => {
        this.#lines.push(`could not start: ${error.message}`);
        void ended(null, null);
      });
    });
  }

  get alive(): boolean {
    return this.#alive;
  }

  /** What it uses now: its cgroup's usage (its tmpfs files included), else its resident set; undefined once gone. */
  async usedBytes(): Promise<number | undefined> {
    return (await this.cgroup?.usage()) ?? (this.pid === undefined ? undefined : residentBytes(this.pid));
  }

  /** Its start's phases in seconds, for a cold start's record (pool/types.ts ColdStart). */
  startPhases(): Pick<ColdStart, 'runnerJail' | 'runnerRuntime' | 'runnerFrom'> {
    const { at, jailedAt, upAt, forked } = this.start;
    const runnerFrom = forked ? 'template' : 'exec';
    if (upAt === undefined) return { runnerFrom };
    const jailed = jailedAt ?? at;
    return { runnerJail: (jailed - at) / 1000, runnerRuntime: (upAt - jailed) / 1000, runnerFrom };
  }

  /** The runner's own pid (a jailed runner's, not its launcher's). */
  get pid(): number | undefined {
    return this.jail?.pid ?? this.child.pid;
  }

  /** A request that gets a reply (a frame with the same id), checked as the answer to its kind. */
  request<K extends Asked>(request: Extract<Request, { t: K }>, blobs: OutBlob[] = []): Promise<Frame<Reply<K>>> {
    return new Promise((resolve) =>
      this.send(request, blobs, (header, replyBlobs) => resolve({ header, blobs: replyBlobs })),
    );
  }

  /**
   * Sends `request` with a new id, which it returns; the reply goes to `onReply` — an UNAVAILABLE
   * one at once if the runner has exited (its exit may not have reached its pool yet).
   */
  send<K extends Asked>(
    request: Extract<Request, { t: K }>,
    blobs: readonly OutBlob[],
    onReply: (reply: Reply<K>, blobs: Uint8Array[]) => void,
  ): number {
    const id = this.#nextId++;
    if (!this.#alive) {
      queueMicrotask(() =>
        onReply(unanswered(id, `${this.label ?? 'the function'}: its runner process has exited; it restarts`), []),
      );
      return id;
    }
    this.#waiting.set(id, {
      check: (frame, replyBlobs) => {
        const reply = readReply<K>(request.t, frame);
        return () => onReply(reply, replyBlobs);
      },
      fail: (failed) => onReply(failed, []),
    });
    if (this.#waiting.size === 1) this.#channel.hold(true);
    this.#channel.send({ ...request, id }, blobs);
    return id;
  }

  /** Lets the frames sent so far leave now (not at the end of the turn). */
  flush(): void {
    this.#channel.flush();
  }

  /**
   * Caps a frame the runner sends, its blobs in the arena counted too: one past it is refused before
   * it is read or copied, and ends the runner (a runner within its limits never sends one).
   */
  capFrames(bytes: number): void {
    this.#channel.maxFrameBytes = Math.min(bytes, 2 ** 31);
  }

  /** Caps what the node writes into the runner's arena at once (../wire/arena.ts arenaCapBytes). */
  capArena(bytes: number): void {
    this.#channel.capArena(bytes);
  }

  /** A message without a reply. */
  tell(notice: Notice): void {
    if (this.#alive) this.#channel.send(notice);
  }

  /**
   * Caps the runner's memory at `limitBytes`: its cgroup's limit, where it has one (the kernel
   * counts its tmpfs files and page cache too), and its resident memory, checked every `everyMs`.
   */
  async watchMemory(limitBytes: number, everyMs = 500): Promise<void> {
    this.#memoryLimit = limitBytes;
    await this.cgroup?.limitMemory(limitBytes);
    clearInterval(this.#memoryTimer);
    this.#memoryTimer = setInterval(async () => {
      const rss = await residentBytes(this.pid!);
      if (rss !== undefined && rss > limitBytes)
        this.kill(
          `its resident memory reached ${(rss / 2 ** 20).toFixed(0)} MiB, past its ${(limitBytes / 2 ** 20).toFixed(0)} MiB limit (limits.runnerMemoryMb)`,
        );
    }, everyMs);
    this.#memoryTimer.unref();
  }

  /** Kills it at once (SIGKILL), saying why. */
  kill(reason?: string): void {
    if (!this.#alive) return;
    this.#killedFor ??= reason;
    this.child.kill('SIGKILL');
  }

  /** Asks it to stop; kills it if it has not exited after `graceMs`. */
  async close(graceMs = 5000): Promise<RunnerExit> {
    if (this.#alive) {
      const timer = setTimeout(() => this.kill(), graceMs);
      timer.unref();
      this.#channel.close();
      const exit = await this.exited;
      clearTimeout(timer);
      return exit;
    }
    return this.exited;
  }
}

/** How a runner ended, in words: its signal or exit code, and why it was killed. */
export function describeExit(exit: RunnerExit): string {
  const how = exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`;
  return exit.killedFor ? `killed (${how}): ${exit.killedFor}` : how;
}
