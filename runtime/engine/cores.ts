/**
 * The cores this process may use: the CPUs it may run on (availableParallelism: its affinity),
 * bounded by its cgroup's CPU quota where one is set — a container's `resources.limits.cpu`, which
 * Linux enforces by throttling, not by hiding CPUs (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us` over
 * `cpu.cfs_period_us`, rounded up). Threads beyond them only wait for the throttle: a lone forward
 * that took every CPU of the host had p90s of 600+ ms under a quota of a few cores.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

export interface UsableCores {
  cores: number;
  /**
   * What bounds them: the CPUs it may run on, its cgroup's quota (in cores, maybe fractional), or its
   * node's count (a runner: its own cgroup, inside the node's, sets no quota of its own).
   */
  from: 'cpus' | 'cgroup-quota' | 'node';
  quota?: number;
}

/** A runner's environment names its node's count here (runtime/runner/supervision/runner-command.ts). */
export const CORES_ENV = 'HEARTH_USABLE_CORES';

let usable: UsableCores | undefined;

/** The cores this process may use (read once). */
export function usableCores(): UsableCores {
  const node = Number(process.env[CORES_ENV]);
  usable ??=
    node > 0
      ? { cores: Math.min(node, availableParallelism()), from: 'node' }
      : readUsable(availableParallelism(), cgroupQuota());
  return usable;
}

/** The cores left of `cpus` by a quota of `quota` cores (undefined: none). */
export function readUsable(cpus: number, quota: number | undefined): UsableCores {
  if (quota === undefined || Math.ceil(quota) >= cpus) return { cores: Math.max(1, cpus), from: 'cpus' };
  return { cores: Math.max(1, Math.ceil(quota)), from: 'cgroup-quota', quota };
}

/** This process's cgroup CPU quota in cores, v2 or v1, or undefined where none is set (or readable). */
function cgroupQuota(): number | undefined {
  let lines: string[];
  try {
    lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
  } catch {
    return undefined;
  }
  for (const line of lines) {
    const [, controllers, path] = line.split(':');
    if (controllers === '' && path !== undefined) {
      const quota = parseQuota(read(`/sys/fs/cgroup${path}/cpu.max`) ?? read(`/sys/fs/cgroup/unified${path}/cpu.max`));
      if (quota !== undefined) return quota;
    }
    if (path !== undefined && controllers?.split(',').includes('cpu')) {
      for (const root of ['/sys/fs/cgroup/cpu', '/sys/fs/cgroup/cpu,cpuacct']) {
        const [q, p] = [read(`${root}${path}/cpu.cfs_quota_us`), read(`${root}${path}/cpu.cfs_period_us`)];
        if (q !== undefined && p !== undefined) return parseQuota(`${q} ${p}`);
      }
    }
  }
  return undefined;
}

/** "QUOTA PERIOD" (v2's cpu.max, or v1's two files joined) as cores; "max" or -1: none. */
export function parseQuota(text: string | undefined): number | undefined {
  const [quota, period] = (text ?? '').trim().split(/\s+/);
  const q = Number(quota);
  const p = Number(period);
  if (quota === 'max' || !(q > 0) || !(p > 0)) return undefined;
  return q / p;
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}
