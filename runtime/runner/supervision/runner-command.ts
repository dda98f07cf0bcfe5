/**
 * How a runner process is started: its environment (nothing of the node's but the math libraries'
 * and devices' settings), Node's permission flags, the jail's command line around it where it is
 * jailed, and the spawn itself, its arena inherited as fd 4.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { closeSync, existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { CORES_ENV, usableCores } from '../../engine/index.js';
import type { JailOptions } from '../walls/index.js';
import { jailArguments, jailPath } from '../walls/index.js';

/**
 * The node_modules the running code resolves its packages from: the nearest above this file — the
 * repository's, or the GPU kit's when this code runs bundled into its dist/ (at another depth).
 */
const NODE_MODULES = nearestNodeModules(dirname(fileURLToPath(import.meta.url)));

function nearestNodeModules(from: string): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir))
    if (existsSync(join(dir, 'node_modules'))) return join(dir, 'node_modules');
  throw new Error(`no node_modules above ${from}: the runner's packages cannot be found`);
}

/**
 * What a runner keeps of the node's environment: how the math libraries and devices are set up,
 * never credentials. BLAS settings matter: without the machine's OPENBLAS_CORETYPE, OpenBLAS
 * picked slower kernels in a runner and its MLP forwards took 1.3× as long as the node's.
 */
const PASSED_ENV =
  /^(LD_LIBRARY_PATH|TZ|LANG|LC_[A-Z]+|OPENBLAS_[A-Z0-9_]+|OMP_[A-Z_]+|GOMP_[A-Z_]+|KMP_[A-Z_]+|MKL_[A-Z_]+|MALLOC_[A-Z_]+_?|GLIBC_TUNABLES|HEARTH_MALLOC_TUNING|CUDA_[A-Z_]+|NVIDIA_[A-Z_]+|PYTORCH_[A-Z_]+)$/;

/** What a runner runs: the runner's entry, the hook worker and the addon (files), in its folder. */
export interface RunnerFiles {
  entry: string;
  hookWorker: string;
  addon: string;
  /** The runner's own folder (its HOME and working directory). */
  dir: string;
}

/** The runner's environment. */
export function runnerEnv(files: RunnerFiles, intraOpThreads: number | undefined): Record<string, string> {
  const env: Record<string, string> = {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: files.dir,
    HEARTH_NATIVE_ADDON: files.addon,
    HEARTH_HOOK_WORKER: files.hookWorker,
  };
  for (const [name, value] of Object.entries(process.env))
    if (value !== undefined && PASSED_ENV.test(name)) env[name] = value;
  if (intraOpThreads !== undefined) env.HEARTH_INTRA_OP_THREADS = String(intraOpThreads);
  // Its own cgroup sets no CPU quota (a weight at most): the node's count, its quota's included.
  env[CORES_ENV] = String(usableCores().cores);
  return env;
}

/** Node's arguments for a runner: its permission flags (unless `permissions` is false) and its entry. */
export function nodeArguments(files: RunnerFiles, permissions: boolean): string[] {
  const { entry, addon, dir } = files;
  const flags = permissions
    ? [
        '--experimental-permission',
        `--allow-fs-read=${NODE_MODULES}/*`,
        `--allow-fs-read=${addon}`,
        `--allow-fs-read=${dir}/*`,
        '--allow-worker',
        '--allow-addons',
      ]
    : [];
  return [...flags, '--no-warnings', entry];
}

/**
 * The program and its arguments: Node (under its permission model unless `permissions` is false)
 * on the runner's entry, inside hearth-jail where `jail` is given — forked by the runner template
 * listening on `template` where one is given (./runner-template.ts), else exec'd.
 */
export function runnerCommand(
  files: RunnerFiles,
  permissions: boolean,
  jail: Omit<JailOptions, 'home' | 'read'> | undefined,
  template?: string,
): [string, string[]] {
  const { entry, hookWorker, addon, dir } = files;
  const node = nodeArguments(files, permissions);
  if (!jail) return [process.execPath, node];
  const read = [NODE_MODULES, addon, ...[entry, hookWorker].map(packagesOf)];
  return [
    jailPath(),
    [
      ...(template ? [`--template=${template}`] : []),
      ...jailArguments({ ...jail, home: dir, read }),
      process.execPath,
      ...node,
    ],
  ];
}

/**
 * Spawns the runner with its arena, if it has one, as fd 4: the arena is its own, made for it and
 * inherited by it alone (the node's copy is closed once it is spawned; the mapping stays).
 */
export function spawnRunner(
  [file, args]: [string, string[]],
  options: { dir: string; env: Record<string, string>; arenaFd?: number; user?: { uid: number; gid: number } },
): ChildProcess {
  const { arenaFd } = options;
  try {
    return spawn(file, args, {
      cwd: options.dir,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', ...(arenaFd !== undefined ? [arenaFd] : [])],
      ...(options.user ? { uid: options.user.uid, gid: options.user.gid } : {}),
    });
  } finally {
    if (arenaFd !== undefined) closeSync(arenaFd);
  }
}

/**
 * The node_modules folder an entry's imports resolve from (the repository's, or the GPU kit's), or
 * the entry's own folder.
 */
function packagesOf(entry: string): string {
  for (let dir = dirname(entry); dir !== dirname(dir); dir = dirname(dir))
    if (basename(dir) === 'node_modules') return dir;
  return dirname(entry);
}
