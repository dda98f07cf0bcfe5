/**
 * A cgroup per runner, where the node may make them: the memory controller caps everything the
 * runner's pages cost — heap, its files in its private /tmp and /dev/shm, page cache — so a model
 * that fills a tmpfs is stopped by the kernel (an RSS poll sees none of that), the pids
 * controller caps its threads, and the cpu controller (where there is one) gives each runner the
 * same weight, so a function with many busy threads does not take the cores from the others.
 * cgroup v1 (the memory, pids and cpu hierarchies) or v2 (a delegated subtree), under the node's
 * own cgroup: `hearth-<node pid>/<runner>`.
 *
 * The node makes and removes the folders; hearth-jail puts the runner in them before it runs
 * (runtime/runner/walls/jail.ts). Folders left by a node that died are removed by the next one to start.
 */
import { mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';

type Controller = 'memory' | 'pids' | 'cpu';
const CONTROLLERS = ['memory', 'pids', 'cpu'] as const;

interface Hierarchy {
  /** The node's own cgroup in this hierarchy (where `hearth-<pid>` goes). */
  own: string;
  /** Where the hierarchy is mounted (a jailed runner sees its own cgroup there, and nothing else). */
  mount: string;
  version: 1 | 2;
  controllers: Controller[];
}

/** Threads a runner may have at once: Node's, LibTorch's, hook threads; a fork bomb stops here. */
const DEFAULT_PIDS = 1024;

/** Every runner's CPU weight, the same for all (v2 cpu.weight; v1 cpu.shares is 1024 for 100). */
export const RUNNER_CPU_WEIGHT = 100;

/** The node's cgroups by hierarchy, from /proc/self/mountinfo and /proc/self/cgroup. */
async function hierarchies(): Promise<Hierarchy[]> {
  const [mountinfo, membership] = await Promise.all([
    readFile('/proc/self/mountinfo', 'utf8'),
    readFile('/proc/self/cgroup', 'utf8'),
  ]);
  const paths = new Map<string, string>();
  for (const line of membership.split('\n')) {
    const [, controllers, path] = line.split(':');
    if (path !== undefined) for (const c of controllers!.split(',')) paths.set(c, path);
  }
  const found: Hierarchy[] = [];
  for (const line of mountinfo.split('\n')) {
    const fields = line.split(' ');
    const dash = fields.indexOf('-');
    if (dash < 0) continue;
    const [type, , options] = fields.slice(dash + 1);
    const mount = fields[4]!;
    if (type === 'cgroup') {
      const controller = CONTROLLERS.find((c) => options?.split(',').includes(c));
      const path = controller && paths.get(controller);
      if (controller && path !== undefined)
        found.push({ own: join(mount, path), mount, version: 1, controllers: [controller] });
    } else if (type === 'cgroup2' && paths.has('')) {
      const own = join(mount, paths.get('')!);
      const available = (await readFile(join(own, 'cgroup.controllers'), 'utf8').catch(() => '')).split(/\s+/);
      const controllers = CONTROLLERS.filter(
        (c) => available.includes(c) && !found.some((h) => h.controllers.includes(c)),
      );
      if (controllers.length > 0) found.push({ own, mount, version: 2, controllers });
    }
  }
  return found;
}

/** A cgroup's CPU weight on v2's scale (100 a process's share): v2 cpu.weight, v1 cpu.shares (1024 for 100). */
function writeCpuWeight(h: Hierarchy, dir: string, weight: number): Promise<void> {
  return h.version === 2
    ? writeFile(join(dir, 'cpu.weight'), String(Math.min(10_000, weight)))
    : writeFile(join(dir, 'cpu.shares'), String(Math.round((weight * 1024) / 100)));
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Removes a cgroup folder and the empty ones under it (a cgroup's files go with its folder). */
async function removeTree(dir: string): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) if (e.isDirectory()) await removeTree(join(dir, e.name));
  await rmdir(dir).catch(() => undefined);
}

export class RunnerCgroups {
  readonly #roots: { dir: string; h: Hierarchy }[];

  private constructor(roots: { dir: string; h: Hierarchy }[]) {
    this.#roots = roots;
  }

  /**
   * This node's cgroup folders, made now; undefined where it may not make them (not root, and no
   * delegated subtree), with the reason.
   */
  static async open(): Promise<RunnerCgroups | { missing: string }> {
    const found = await hierarchies().catch(() => []);
    const roots: { dir: string; h: Hierarchy }[] = [];
    const missing: string[] = [];
    for (const h of found) {
      await RunnerCgroups.#sweep(h.own);
      const dir = join(h.own, `hearth-${process.pid}`);
      try {
        await mkdir(dir, { recursive: true });
        if (h.version === 2) {
          // v2: the controllers pass down only through cgroup.subtree_control, which a cgroup that
          // holds processes (the node's own) may not set unless it is the root.
          const enable = h.controllers.map((c) => `+${c}`).join(' ');
          await writeFile(join(h.own, 'cgroup.subtree_control'), enable).catch(() => undefined);
          await writeFile(join(dir, 'cgroup.subtree_control'), enable);
        }
        // The runners together weigh as many cores as the host has (as Kubernetes weighs its pods'
        // cgroup), not as one process beside the node's threads; each runner weighs the same within.
        if (h.controllers.includes('cpu')) await writeCpuWeight(h, dir, RUNNER_CPU_WEIGHT * availableParallelism());
        roots.push({ dir, h });
      } catch (error) {
        missing.push(`${h.own}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
        await rmdir(dir).catch(() => undefined);
      }
    }
    const has = (c: Controller) => roots.some((r) => r.h.controllers.includes(c));
    if (has('memory') && has('pids')) return new RunnerCgroups(roots);
    for (const r of roots) await rmdir(r.dir).catch(() => undefined);
    return {
      missing:
        found.length === 0
          ? 'no cgroup memory or pids controller is mounted'
          : `this node may not make cgroups for its runners (${missing.join('; ') || 'memory or pids missing'})`,
    };
  }

  /** Folders of nodes that are gone (`hearth-<pid>` whose process has ended). */
  static async #sweep(own: string): Promise<void> {
    for (const name of await readdir(own).catch(() => [] as string[])) {
      const pid = Number(/^hearth-(\d+)$/.exec(name)?.[1]);
      if (pid > 0 && pid !== process.pid && !alive(pid)) await removeTree(join(own, name));
    }
  }

  /** Makes the runner's cgroups; returns their cgroup.procs files for hearth-jail to join. */
  async create(name: string, pids = DEFAULT_PIDS): Promise<RunnerCgroup> {
    const dirs: { dir: string; h: Hierarchy }[] = [];
    for (const r of this.#roots) {
      const dir = join(r.dir, name);
      await mkdir(dir, { recursive: true });
      dirs.push({ dir, h: r.h });
      if (r.h.controllers.includes('pids')) await writeFile(join(dir, 'pids.max'), String(pids));
      if (r.h.controllers.includes('cpu')) await writeCpuWeight(r.h, dir, RUNNER_CPU_WEIGHT);
    }
    return new RunnerCgroup(dirs);
  }

  async close(): Promise<void> {
    for (const r of this.#roots) await removeTree(r.dir);
  }
}

/** One runner's cgroups. */
export class RunnerCgroup {
  readonly #dirs: { dir: string; h: Hierarchy }[];

  constructor(dirs: { dir: string; h: Hierarchy }[]) {
    this.#dirs = dirs;
  }

  /** The files hearth-jail writes the runner's pid to. */
  get procs(): string[] {
    return this.#dirs.map((d) => join(d.dir, 'cgroup.procs'));
  }

  /** Where each of them is mounted (in the order of `procs`): the runner sees its own there. */
  get mounts(): string[] {
    return this.#dirs.map((d) => d.h.mount);
  }

  /** Whether it has a CPU weight of its own (a cpu controller was there to give it one). */
  get cpu(): boolean {
    return this.#dirs.some((d) => d.h.controllers.includes('cpu'));
  }

  #memory(): { dir: string; h: Hierarchy } | undefined {
    return this.#dirs.find((d) => d.h.controllers.includes('memory'));
  }

  /** Caps its memory, swap included (nothing is swapped out past the cap). */
  async limitMemory(bytes: number): Promise<void> {
    const m = this.#memory();
    if (!m) return;
    if (m.h.version === 2) {
      await writeFile(join(m.dir, 'memory.max'), String(bytes));
      await writeFile(join(m.dir, 'memory.swap.max'), '0').catch(() => undefined);
      return;
    }
    // v1: memsw (memory + swap) may not go below memory's limit, so the order depends on the way.
    const memory = join(m.dir, 'memory.limit_in_bytes');
    const memsw = join(m.dir, 'memory.memsw.limit_in_bytes');
    await writeFile(memsw, String(bytes)).catch(() => undefined);
    await writeFile(memory, String(bytes));
    await writeFile(memsw, String(bytes)).catch(() => undefined);
  }

  /** The memory its processes use now (undefined: no memory controller, or gone). */
  async usage(): Promise<number | undefined> {
    const m = this.#memory();
    if (!m) return undefined;
    const file = join(m.dir, m.h.version === 2 ? 'memory.current' : 'memory.usage_in_bytes');
    const text = await readFile(file, 'utf8').catch(() => undefined);
    return text === undefined ? undefined : Number(text);
  }

  /** How many times the kernel's OOM killer ended a process here (it ran past limitMemory). */
  async oomKills(): Promise<number> {
    const m = this.#memory();
    if (!m) return 0;
    const text = await readFile(join(m.dir, m.h.version === 2 ? 'memory.events' : 'memory.oom_control'), 'utf8').catch(
      () => '',
    );
    return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0);
  }

  /** Removes its folders once its processes are gone (a dying runner may linger a moment). */
  async remove(): Promise<void> {
    for (const { dir } of this.#dirs) {
      for (let i = 0; i < 50; i++) {
        try {
          await rmdir(dir);
          break;
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if (code === 'ENOENT') break;
          if (code !== 'EBUSY') throw error;
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    }
  }
}
