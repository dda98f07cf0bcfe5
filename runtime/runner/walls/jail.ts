/**
 * The kernel's walls around a runner: what hearth-jail (native/jail) is asked to apply, and what
 * it reports back. The policy is here; the mechanism is there.
 *
 * A jailed runner
 * - lives in its own user, mount, pid, network, IPC, UTS and cgroup namespaces: its own /tmp and
 *   /dev/shm (tmpfs, size-limited, counted in its memory cgroup, gone with it), its own /proc, no
 *   network interface but loopback, no other process in sight;
 * - runs as a uid of its own (a root node's runners each take a free uid of the range, locked for
 *   the host; a node that is not root keeps its uid outside and gives each runner its own inside);
 * - under Landlock reads only the runtime's files (the libraries the node has mapped, the system's
 *   library folders, node_modules, the addon) and its own folder, writes only its private /tmp and
 *   /dev/shm, executes only Node, binds and connects no TCP port, and signals nothing outside;
 * - under seccomp makes no socket and no process, and reaches no tracing, mount, namespace, keyring,
 *   bpf, perf, userfaultfd or io_uring call;
 * - sits in a memory, pids and cpu cgroup of its own where the node may make one
 *   (runtime/runner/walls/cgroups.ts), and sees under /sys/fs/cgroup those alone, not the host's tree;
 * - is the OOM killer's first choice (oom_score_adj RUNNER_OOM_SCORE_ADJ), never the node.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { DEFAULT_ADDON_PATH } from '../../engine/index.js';

/** `auto`: every layer the host offers (the node logs which); `strict`: all or no runner; `off`: none. */
export type SandboxMode = 'auto' | 'strict' | 'off';

export interface JailLayers {
  /** The namespaces the runner has of its own, comma-separated ('' for none). */
  namespaces: string;
  privateProc: boolean;
  uid: boolean;
  /** The Landlock ABI applied (0: none). */
  landlock: number;
  seccomp: boolean;
  cgroup: boolean;
  /** The runner's oom_score_adj, as hearth-jail set it (0: not set). */
  oomScoreAdj: number;
  /** A CPU weight of its own (a cpu cgroup): said by the node, not by hearth-jail. */
  cpu?: boolean;
}

/** The OOM killer takes a runner before anything else on the host (the node keeps its own 0). */
export const RUNNER_OOM_SCORE_ADJ = 1000;

/** What hearth-jail reports, as the first frame on the runner's channel. */
export interface JailReport {
  /** The runner's pid as the node sees it (inside, it is 1). */
  pid: number;
  /** Its uid outside its user namespace. */
  uid: number;
  layers: JailLayers;
  /** Why a layer is missing. */
  notes: string[];
}

/** The launcher, beside the addon it was built with (HEARTH_JAIL names another). */
export function jailPath(): string {
  return process.env.HEARTH_JAIL ?? `${dirname(process.env.HEARTH_NATIVE_ADDON ?? DEFAULT_ADDON_PATH)}/hearth-jail`;
}

/** Folders and files every runner may read: the system's libraries and what Node and LibTorch read. */
const SYSTEM_READ = [
  '/usr',
  '/lib',
  '/lib64',
  '/lib32',
  '/etc/ld.so.cache',
  '/etc/localtime',
  // Node refuses to start when its OpenSSL configuration exists and cannot be read.
  '/etc/ssl/openssl.cnf',
  '/proc/self',
  '/proc/cpuinfo',
  '/proc/meminfo',
  '/proc/stat',
  // Kernel settings (read-only; allocators and drivers read a few).
  '/proc/sys',
  '/sys/devices/system',
  '/sys/fs/cgroup',
];
const DEVICES = ['/dev/null', '/dev/zero', '/dev/full', '/dev/random', '/dev/urandom'];
/** What CUDA and NVML open, where the host has an NVIDIA driver. */
const GPU_READ = ['/proc/driver/nvidia', '/sys/bus/pci', '/sys/devices', '/sys/module/nvidia'];

let runtimeFiles: { read: string[]; devices: string[] } | undefined;

/**
 * What a runner reads besides its own folder: the system's lists, the folders of every shared
 * library and addon the node has mapped (LibTorch and CUDA wherever they are installed, the addon),
 * and `extra`.
 */
export function runtimeReadable(extra: string[]): { read: string[]; devices: string[] } {
  if (!runtimeFiles) {
    const mapped = new Set<string>();
    try {
      for (const line of readFileSync('/proc/self/maps', 'utf8').split('\n')) {
        const path = line.slice(line.indexOf('/')).trim();
        // Shared libraries and addons only: their folders, not those of anything else mapped.
        if (line.includes('/') && /\.(so(\.\d+)*|node)$/.test(path) && !/^\/(dev|proc)\//.test(path))
          mapped.add(dirname(path));
      }
    } catch {
      // Not Linux's /proc: the system's lists alone.
    }
    // Libraries loaded later (CUDA's, at its first use): from LD_LIBRARY_PATH, and the pip wheels'
    // nvidia/ packages beside a torch/lib the node maps.
    for (const dir of (process.env.LD_LIBRARY_PATH ?? '').split(':')) if (dir.startsWith('/')) mapped.add(dir);
    for (const dir of [...mapped]) if (dir.endsWith('/torch/lib')) mapped.add(join(dirname(dirname(dir)), 'nvidia'));
    const gpu = existsSync('/dev/nvidiactl');
    const nvidia = gpu
      ? readdirSync('/dev')
          .filter((d) => d.startsWith('nvidia'))
          .map((d) => `/dev/${d}`)
      : [];
    runtimeFiles = {
      read: [...SYSTEM_READ, ...(gpu ? GPU_READ : []), ...mapped],
      devices: [...DEVICES, ...nvidia],
    };
  }
  return { read: [...new Set([...runtimeFiles.read, ...extra])], devices: runtimeFiles.devices };
}

export interface JailOptions {
  mode: Exclude<SandboxMode, 'off'>;
  /** The runner's folder: it reads it (its artifacts are linked there), and it becomes its uid's. */
  home: string;
  /** Runner number, to spread uids. */
  hint: number;
  /**
   * Root: each runner a free uid of [firstUid, firstUid + count), locked under lockDir, in group
   * gid. Not root: the node's uid outside, and `firstUid + hint % count` inside its user namespace.
   */
  users: { firstUid: number; count: number; gid: number; lockDir: string };
  /** Files and folders to read besides the runtime's and its home. */
  read: string[];
  /** cgroup.procs files the runner joins before it runs. */
  cgroupProcs: string[];
  /** Where each one's hierarchy is mounted (the runner sees its own cgroup there, nothing else). */
  cgroupMounts: string[];
  /** Size of its private /tmp and of its /dev/shm, each. */
  tmpBytes: number;
}

/** hearth-jail's arguments, up to and including `--`: the program and its arguments follow. */
export function jailArguments(o: JailOptions): string[] {
  const { read, devices } = runtimeReadable([...o.read, o.home]);
  return [
    '--namespaces',
    '--landlock',
    '--seccomp',
    '--report-fd=3',
    `--home=${o.home}`,
    `--tmp-size=${o.tmpBytes}`,
    `--uid-hint=${o.hint}`,
    '--uid',
    `--uid-range=${o.users.firstUid}:${o.users.count}`,
    `--gid=${o.users.gid}`,
    `--lock-dir=${o.users.lockDir}`,
    ...(o.mode === 'strict' ? ['--require'] : []),
    ...read.map((p) => `--ro=${p}`),
    ...devices.map((p) => `--dev=${p}`),
    ...o.cgroupProcs.map((p) => `--cgroup-procs=${p}`),
    ...o.cgroupMounts.map((p) => `--cgroup-mount=${p}`),
    `--oom-score-adj=${RUNNER_OOM_SCORE_ADJ}`,
    '--',
  ];
}

/**
 * The layers in one line for the node's log: `namespaces(user,mount,…) uid landlock(7) seccomp
 * cgroup cpu-weight oom_score_adj(1000)`.
 */
export function describeLayers(l: JailLayers): string {
  return [
    l.namespaces ? `namespaces(${l.namespaces}${l.privateProc ? '' : '; host /proc'})` : '',
    l.uid ? 'uid' : '',
    l.landlock ? `landlock(ABI ${l.landlock})` : '',
    l.seccomp ? 'seccomp' : '',
    l.cgroup ? 'cgroup' : '',
    l.cpu ? 'cpu-weight' : '',
    l.oomScoreAdj ? `oom_score_adj(${l.oomScoreAdj})` : '',
  ]
    .filter(Boolean)
    .join(' ');
}

/** The layers that are not there, by name (empty: all are). */
export function missingLayers(l: JailLayers): string[] {
  return [
    ...(l.namespaces ? [] : ['namespaces']),
    ...(l.uid ? [] : ['uid']),
    ...(l.landlock ? [] : ['landlock']),
    ...(l.seccomp ? [] : ['seccomp']),
    ...(l.cgroup ? [] : ['cgroup']),
  ];
}
