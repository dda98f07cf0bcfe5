/**
 * The kernel's walls around a runner, seen from the node: what hearth-jail (native/jail) is asked to
 * apply and what it reports (jail.ts), and the memory and pids cgroup of each runner (cgroups.ts).
 */

export type { RunnerCgroup } from './cgroups.js';
export { RUNNER_CPU_WEIGHT, RunnerCgroups } from './cgroups.js';
export type { JailLayers, JailOptions, JailReport, SandboxMode } from './jail.js';
export {
  describeLayers,
  jailArguments,
  jailPath,
  missingLayers,
  RUNNER_OOM_SCORE_ADJ,
  runtimeReadable,
} from './jail.js';
