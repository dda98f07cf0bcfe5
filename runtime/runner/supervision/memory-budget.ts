/**
 * The node's memory budget for its runners (Kubernetes' node allocatable): the host's memory less
 * a reserve for the node itself. Each runner alive (serving, or parked for its version's next cold
 * start) is charged as Kubernetes charges a pod's *request*, not its limit: what it uses now (its
 * cgroup's usage, else its resident set), and at least what a start is expected to take (twice the
 * model file, plus the runner itself) — never more than its limit. A start whose charge does not
 * fit beside the others' is refused, naming the numbers, once the parked runners (idle, of any
 * function) have been ended to make room. Charging limits instead refused the third of the four
 * example functions on a 24 GiB host (8 GiB each by default) while they used 1.3 GiB together.
 *
 * What the charges leave out (a runner growing toward its limit later) is the kernel's to settle:
 * each runner is capped by its own limit, and is the OOM killer's first choice (oom_score_adj 1000),
 * never the node.
 */
import { UnavailableError } from '../../../sdk/errors.js';
import type { RunnerProcess } from './runner-process.js';

/** What a runner itself takes before its model: Node, LibTorch, the hook threads. */
const RUNNER_BASE_BYTES = 384 * 2 ** 20;
/** The least a start is charged. */
const MIN_START_BYTES = 512 * 2 ** 20;

/** What a start is expected to take: twice its model file (the file, and the weights loaded from it) and the runner, within its limit. */
export function startCharge(limitBytes: number, modelBytes: number): number {
  return Math.min(limitBytes, Math.max(2 * modelBytes + RUNNER_BASE_BYTES, MIN_START_BYTES));
}

/** A runner's charge: held from its admission until it ends. */
interface Charge {
  limit: number;
  start: number;
}

const MIB = 2 ** 20;
const mib = (bytes: number): string => `${Math.round(bytes / MIB)} MiB`;

export class MemoryBudget {
  /** Bytes the runners may hold in all. */
  readonly allocatable: number;
  readonly #held = new Map<RunnerProcess, Charge>();
  /** What a runner uses now (undefined: not known, or gone). */
  readonly #usage: (runner: RunnerProcess) => Promise<number | undefined>;

  constructor(allocatableBytes: number, usage: (runner: RunnerProcess) => Promise<number | undefined>) {
    this.allocatable = allocatableBytes;
    this.#usage = usage;
  }

  /** What the runners are charged now, `but` not counted: each its usage, at least its start, at most its limit. */
  async held(but?: RunnerProcess): Promise<number> {
    const charges = [...this.#held].filter(([runner]) => runner !== but);
    const used = await Promise.all(charges.map(([runner]) => this.#usage(runner)));
    return charges.reduce((sum, [, c], i) => sum + Math.min(c.limit, Math.max(c.start, used[i] ?? 0)), 0);
  }

  /**
   * Charges `runner` its start (`limitBytes` its limit, `startBytes` what its start takes: see
   * startCharge); `reclaim` ends one idle runner and resolves once it is gone (false: none is left),
   * and is called while the others' charges leave no room. Throws UnavailableError, naming the
   * budget, when even then it does not fit.
   */
  async admit(
    runner: RunnerProcess,
    { limitBytes, startBytes }: { limitBytes: number; startBytes: number },
    label: string,
    reclaim: () => Promise<boolean>,
  ): Promise<void> {
    if (limitBytes > this.allocatable)
      throw new UnavailableError(
        `${label} asks ${mib(limitBytes)} (limits.runnerMemoryMb), more than this node's ${mib(this.allocatable)} allocatable to runners (HEARTH_NODE_MEMORY_MB less HEARTH_NODE_RESERVED_MB): lower limits.runnerMemoryMb`,
      );
    while ((await this.held(runner)) + startBytes > this.allocatable) if (!(await reclaim())) break;
    const held = await this.held(runner);
    if (held + startBytes > this.allocatable)
      throw new UnavailableError(
        `${label} cannot start here: its start's ${mib(startBytes)} and the ${mib(held)} the other runners use pass this node's ${mib(this.allocatable)} allocatable to runners (HEARTH_NODE_MEMORY_MB less HEARTH_NODE_RESERVED_MB); scale another function to zero, or add a node`,
      );
    this.#held.set(runner, { limit: limitBytes, start: startBytes });
  }

  /** The runner ended: its charge is free again. */
  release(runner: RunnerProcess): void {
    this.#held.delete(runner);
  }
}
