/**
 * Starts runner processes in their sandbox, and keeps one spare started so a cold start does not
 * wait for a process to boot (Node, the bundled runner, LibTorch).
 *
 * The sandbox of a runner, in layers (each would hold without the others):
 * - the kernel's jail (runtime/runner/walls/jail.ts, hearth-jail): its own namespaces, uid, Landlock
 *   ruleset, seccomp filter and memory/pids cgroup — what binds the model, which is native code;
 * - an environment with nothing of the node's but the math libraries' and devices' settings
 *   (runner-command.ts): PATH, HOME (its own directory), where the addon and the hook worker are;
 * - Node's permission model: it reads only the code it runs (node_modules, the addon) and its own
 *   directory, into which the node links one version's model and hook; it may start worker threads
 *   (hooks) and load the addon; it cannot start processes or write files (JavaScript only);
 * - hooks in V8 isolates (runtime/hooks/sandbox.ts).
 */
import { chmod, chown, copyFile, link, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { UnavailableError } from '../../../sdk/errors.js';
import { addonLocation, createArena, usableCores } from '../../engine/index.js';
import { bundleEntry, hookWorkerFile } from '../../hooks/index.js';
import type { RunnerCgroup, SandboxMode } from '../walls/index.js';
import { RUNNER_OOM_SCORE_ADJ } from '../walls/index.js';
import { DEFAULT_ARENA_MB } from '../wire/index.js';
import { MemoryBudget } from './memory-budget.js';
import { ParkedRunners } from './parked-runners.js';
import type { RunnerFiles } from './runner-command.js';
import { runnerCommand, runnerEnv, spawnRunner } from './runner-command.js';
import { jailUsers, ROOT_PREFIX, renice, sweepRoots } from './runner-os.js';
import { RunnerProcess } from './runner-process.js';
import { claimEarlyTemplate, RunnerTemplate, TemplateSlot } from './runner-template.js';
import type { SandboxReport } from './sandbox-record.js';
import { SandboxRecord } from './sandbox-record.js';
import { StartGate } from './start-gate.js';

const RUNNER_ENTRY = fileURLToPath(new URL('../runner-main.ts', import.meta.url));

export interface RunnerHostOptions {
  /**
   * Where runner directories go (one per runner, removed when it ends). Default: a new directory
   * under the system's temporary directory, which a runner's user can reach whatever the data
   * directory's parents allow.
   */
  dir?: string;
  /**
   * Who runners run as: each its own uid from `firstUid` up (UID_SPAN of them), in group `gid` —
   * host uids when the node is root; inside their user namespaces when it is not (outside, the
   * node's). Absent: the node's own user.
   */
  users?: { firstUid: number; gid: number };
  /** The kernel's jail around each runner (runtime/runner/walls/jail.ts; default `auto`). */
  sandbox?: SandboxMode;
  /** Size of a jailed runner's private /tmp, and of its /dev/shm (default 64 MiB each). */
  tmpBytes?: number;
  /** Node's permission model on the runners (default true). */
  permissions?: boolean;
  /** LibTorch intra-op threads in each runner. */
  intraOpThreads?: number;
  /** Bytes of each runner's shared-memory arena (../wire/arena.ts; default DEFAULT_ARENA_MB MiB; 0: none). */
  arenaBytes?: number;
  /** Hears, once, why an arena could not be made (runners then take every blob on the socket). */
  onArenaFailed?: (why: string) => void;
  /** This node's allocatable to runners; a start past it is refused (./memory-budget.ts). Absent: no budget. */
  memoryBudgetBytes?: number;
  /** Keep one runner started ahead of need (default true). */
  spare?: boolean;
  /**
   * Fork jailed runners from a runner template with the runtime loaded (./runner-template.ts;
   * default true); without it, or where it cannot start, each runner execs Node.
   */
  template?: boolean;
  /** Hears, once, why the runner template could not start (runners then exec Node). */
  onTemplateFailed?: (why: string) => void;
  /** Where a runner's output lines go (its function's log). */
  onLine?: (line: string, runner: RunnerProcess) => void;
}

let runnerFile: Promise<string> | undefined;

/** Runner uids in use at once at most (a jailed runner takes a free one; an unjailed one wraps round). */
const UID_SPAN = 65_536;

/**
 * The runner's entry as one ES module (runners start without a TypeScript loader): bundled here on
 * first use, or prebuilt and named by HEARTH_RUNNER_ENTRY (the GPU kit, which carries no esbuild).
 */
export function runnerEntryFile(): Promise<string> {
  const given = process.env.HEARTH_RUNNER_ENTRY;
  if (given) return Promise.resolve(given);
  runnerFile ??= bundleEntry(RUNNER_ENTRY, ['piscina', 'esbuild', 'isolated-vm']);
  return runnerFile;
}

export class RunnerHost {
  readonly #o: RunnerHostOptions;
  #spare: Promise<RunnerProcess> | undefined;
  /** The spare while it boots (its process exists, its hello has not come). */
  #booting: RunnerProcess | undefined;
  #count = 0;
  #closed = false;
  #dir: Promise<string> | undefined;
  readonly #live = new Set<RunnerProcess>();
  /** What the jail applied to the runners, and their cgroups. */
  readonly #record = new SandboxRecord();
  /** Why the last spare failed to start, if it did. */
  spareError: string | undefined;
  /** Resolves with the first jailed runner's report (the spare's, or a cold start's when the spare is late). */
  readonly reported: Promise<SandboxReport> = this.#record.reported;
  readonly #parked = new ParkedRunners();
  #arenaFailed = false;
  readonly #template: TemplateSlot;
  /** Runner starts at once: one per core. */
  readonly #gate = new StartGate(usableCores().cores);
  readonly #budget: MemoryBudget | undefined;

  constructor(options: RunnerHostOptions) {
    this.#o = options;
    const early = claimEarlyTemplate(options);
    if (early) this.#dir = sweepRoots().then(() => early.root);
    this.#template = new TemplateSlot(
      async () => RunnerTemplate.start((await this.#code()).addon, options.permissions !== false, await this.#root()),
      (why) => options.onTemplateFailed?.(why),
      early?.template,
    );
    const budget = options.memoryBudgetBytes;
    this.#budget = budget === undefined ? undefined : new MemoryBudget(budget, (runner) => runner.usedBytes());
  }

  /** Bytes the runners' charges may add up to here (undefined: no budget). */
  get allocatableBytes(): number | undefined {
    return this.#budget?.allocatable;
  }

  /**
   * Charges `runner`'s start to the node's budget (./memory-budget.ts), ending parked runners to
   * make room; throws UnavailableError, naming the numbers, where it does not fit.
   */
  async admit(runner: RunnerProcess, charge: { limitBytes: number; startBytes: number }, label: string): Promise<void> {
    await this.#budget?.admit(runner, charge, label, () => this.#parked.reclaim());
  }

  /**
   * Starts the spare ahead of the next cold start; resolves once a spare is up (or could not
   * start: the next cold start spawns its own runner).
   */
  warm(): Promise<void> {
    if (this.#o.spare !== false && !this.#spare && !this.#closed) {
      this.#spare = this.#spawn(true);
      this.#spare.catch((error: unknown) => {
        this.spareError = (error as Error).message;
        this.#spare = undefined;
      });
    }
    return this.#spare
      ? this.#spare.then(
          () => undefined,
          () => undefined,
        )
      : Promise.resolve();
  }

  /**
   * A started runner: one parked by this version (`name@version`) if there is one, else the spare.
   * The taker calls warm() once its load is done, so the next spare does not boot while that load
   * competes for the cores.
   */
  async take(version: string): Promise<RunnerProcess> {
    if (this.#closed) throw new UnavailableError('this node is closing: it starts no runner');
    const parked = this.#parked.take(version);
    if (parked) return parked;
    const spare = this.#spare;
    this.#spare = undefined;
    // Wanted now: the spare boots on at full priority.
    if (this.#booting) renice(this.#booting, 0);
    let runner = spare ? await spare.catch(() => undefined) : undefined;
    if (!runner || !runner.alive) runner = await this.#spawn(false);
    else renice(runner, 0);
    return runner;
  }

  /** Links a version's model and hook into the runner's directory; their paths there. */
  async place(
    runner: RunnerProcess,
    files: { model: string; hookBundle?: string },
  ): Promise<{ model: string; hookBundle?: string }> {
    const put = async (from: string, name: string): Promise<string> => {
      const to = join(runner.dir, name);
      await rm(to, { force: true });
      // A hard link shares the file (no copy); across file systems it is copied.
      await link(from, to).catch(() => copyFile(from, to));
      return to;
    };
    return {
      model: await put(files.model, 'model.pt'),
      ...(files.hookBundle ? { hookBundle: await put(files.hookBundle, 'hook.mjs') } : {}),
    };
  }

  /** A new arena, or none where the kernel will not make one (its blobs then go on the socket), said once. */
  #arena(bytes: number): { fd: number; buffer: ArrayBuffer } | undefined {
    try {
      return createArena(bytes);
    } catch (error) {
      if (!this.#arenaFailed) this.#o.onArenaFailed?.((error as Error).message);
      this.#arenaFailed = true;
      return undefined;
    }
  }

  /**
   * A new runner process, in its jail where it has one, once it is up (its hello has come): forked
   * by the runner template where there is one, else exec'd — and exec'd again should a fork fail.
   */
  #spawn(spare: boolean): Promise<RunnerProcess> {
    return this.#gate.run(() => this.#spawnOnce(spare));
  }

  async #spawnOnce(spare: boolean): Promise<RunnerProcess> {
    const code = await this.#code();
    const mode = this.#o.sandbox ?? 'auto';
    const jailed = mode !== 'off' && this.#record.jailFound(mode);
    const template = jailed && this.#o.template !== false ? await this.#template.get() : undefined;
    if (!template) return this.#spawnIn(spare, code, jailed);
    try {
      return await this.#spawnIn(spare, code, jailed, template.socket);
    } catch (error) {
      // Given up only where the template failed it (a runner's own failure would meet an exec too).
      const message = (error as Error).message;
      if (this.#closed || !/runner template/.test(message)) throw error;
      await this.#template.giveUp(`a runner it forked failed to start: ${message}`);
      return this.#spawnIn(spare, code, jailed);
    }
  }

  /** What every runner runs: its entry, the hook worker and the addon. */
  async #code(): Promise<Omit<RunnerFiles, 'dir'>> {
    const [entry, hookWorker] = await Promise.all([runnerEntryFile(), hookWorkerFile()]);
    return { entry, hookWorker, addon: addonLocation() };
  }

  async #spawnIn(
    spare: boolean,
    code: Omit<RunnerFiles, 'dir'>,
    jailed: boolean,
    template?: string,
  ): Promise<RunnerProcess> {
    const n = ++this.#count;
    const mode = this.#o.sandbox ?? 'auto';
    const user = this.#o.users && { uid: this.#o.users.firstUid + (n % UID_SPAN), gid: this.#o.users.gid };
    // A jailed runner's folder is made its uid's by hearth-jail, which picks the uid.
    const owner = user && !jailed && process.getuid?.() === 0 ? user : undefined;
    const dir = await this.#runnerDir(n, owner);
    const files: RunnerFiles = { ...code, dir };
    const env = runnerEnv(files, this.#o.intraOpThreads);
    const cgroup = jailed ? await this.#record.cgroup(`r${n}`, mode) : undefined;
    const command = runnerCommand(
      files,
      this.#o.permissions !== false,
      jailed && mode !== 'off'
        ? {
            mode,
            hint: n,
            users: await jailUsers(this.#o.users, UID_SPAN),
            cgroupProcs: cgroup?.procs ?? [],
            cgroupMounts: cgroup?.mounts ?? [],
            tmpBytes: this.#o.tmpBytes ?? 64 * 2 ** 20,
          }
        : undefined,
      template,
    );
    // Its arena is its own: made for it, inherited by it alone as fd 4 (the node's copy is closed
    // once it is spawned; the mapping stays). Nothing is awaited between the two.
    const arenaBytes = this.#o.arenaBytes ?? DEFAULT_ARENA_MB * 2 ** 20;
    const arena = arenaBytes > 0 ? this.#arena(arenaBytes) : undefined;
    if (arena) env.HEARTH_ARENA_FD = '4';
    if (spare) env.HEARTH_PREFAULT = '1';
    const child = spawnRunner(command, { dir, env, arenaFd: arena?.fd, user: owner });
    const runner = new RunnerProcess(child, dir, (line) => this.#o.onLine?.(line, runner), cgroup, arena?.buffer);
    runner.start.forked = template !== undefined;
    // hearth-jail sets a jailed runner's; an unjailed one's is set here, before it is given a
    // version to load (no tenant code runs before that).
    if (!jailed && child.pid)
      await writeFile(`/proc/${child.pid}/oom_score_adj`, String(RUNNER_OOM_SCORE_ADJ)).catch(() => undefined);
    await this.#up(runner, spare, jailed, cgroup);
    if (jailed) this.#record.check(runner, mode);
    return runner;
  }

  /** A runner's own folder, new and empty (`owner`'s, where the node gives it to the runner's uid). */
  async #runnerDir(n: number, owner: { uid: number; gid: number } | undefined): Promise<string> {
    const dir = join(await this.#root(), `r${n}`);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { mode: 0o700 });
    if (owner) await chown(dir, owner.uid, owner.gid);
    return dir;
  }

  /**
   * Waits for a spawned runner's hello (a runner that exits first fails the start), and cleans up
   * after it whenever it ends: its cgroup and its folder.
   */
  async #up(runner: RunnerProcess, spare: boolean, jailed: boolean, cgroup: RunnerCgroup | undefined): Promise<void> {
    // A spare boots behind whatever serves now (its priority is restored when it is taken).
    if (spare) {
      this.#booting = runner;
      if (jailed) void runner.jailed.then(() => this.#booting === runner && renice(runner, 10));
      else renice(runner, 10);
    }
    this.#live.add(runner);
    runner.cleaned = runner.exited.then(async (exit) => {
      // A forked runner that crashed: the next is forked from a new template (./runner-template.ts).
      if (runner.start.forked && exit.signal && !['SIGKILL', 'SIGTERM'].includes(exit.signal))
        void this.#template.retire();
      this.#live.delete(runner);
      this.#budget?.release(runner);
      await cgroup?.remove().catch(() => undefined);
      await rm(runner.dir, { recursive: true, force: true }).catch(() => undefined);
    });
    const exited = runner.exited.then((exit) => {
      throw new Error(
        `a runner exited as it started (${exit.signal ?? `code ${exit.code}`}): ${exit.lastLines.slice(-5).join(' | ')}`,
      );
    });
    try {
      await Promise.race([runner.ready, exited]);
    } finally {
      if (this.#booting === runner) this.#booting = undefined;
    }
  }

  /**
   * The layers of the kernel's jail the first runner reported, and why any is missing; undefined
   * when runners are not jailed or none has started.
   */
  get sandbox(): SandboxReport | undefined {
    return this.#record.sandbox;
  }

  /** Keeps a runner whose pool stopped for its version's next cold start (./parked-runners.ts). */
  park(runner: RunnerProcess, version: string): void {
    if (!runner.alive || this.#closed) return void runner.close(1000);
    this.#parked.park(runner, version);
  }

  /** Ends the parked runners of a function (it was deleted). */
  discard(name: string): void {
    this.#parked.discard(name);
  }

  /** The directory of runner directories: runners may pass through it (0711), not list it. */
  #root(): Promise<string> {
    this.#dir ??= (async () => {
      if (!this.#o.dir) await sweepRoots();
      const root = this.#o.dir ?? (await mkdtemp(join(tmpdir(), `${ROOT_PREFIX}${process.pid}-`)));
      await mkdir(root, { recursive: true });
      await chmod(root, 0o711);
      return root;
    })();
    return this.#dir;
  }

  /** Stops the spare and every runner still alive. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#parked.clear();
    // Runners do not hold the event loop (they are unref'd), so a node ending on SIGTERM would
    // exit with their exits still awaited and leave their folders and cgroups: this holds it.
    const hold = setInterval(() => undefined, 60_000);
    try {
      const spare = this.#spare;
      this.#spare = undefined;
      await spare?.then(
        (r) => r.close(),
        () => undefined,
      );
      // Each runner's folder and cgroup go as it ends (#up), before the node's own are removed.
      await Promise.all(
        [...this.#live].map(async (r) => {
          await r.close(1000);
          await r.cleaned;
        }),
      );
      await this.#template.close();
      if (this.#dir && !this.#o.dir) await rm(await this.#dir, { recursive: true, force: true });
      await this.#record.close();
    } finally {
      clearInterval(hold);
    }
  }
}
