/**
 * The node's memory budget for its runners (Kubernetes' node allocatable): the host's memory less
 * a reserve for the node itself. The memory limits of the runners alive (serving, or parked for
 * their version's next cold start) may not add up past it, so the kernel's OOM killer is never what
 * settles a node that took on more than it has: a start past it is refused, naming the numbers,
 * once the parked runners (idle, of any function) have been ended to make room.
 */
import { UnavailableError } from '../../../sdk/errors.js';
import type { RunnerProcess } from './runner-process.js';

const MIB = 2 ** 20;
const mib = (bytes: number): string => `${Math.round(bytes / MIB)} MiB`;

export class MemoryBudget {
  /** Bytes the runners may hold in all. */
  readonly allocatable: number;
  /** Each runner's limit, held from its admission until it ends. */
  readonly #held = new Map<RunnerProcess, number>();

  constructor(allocatableBytes: number) {
    this.allocatable = allocatableBytes;
  }

  /** What the runners hold now, `but` not counted. */
  held(but?: RunnerProcess): number {
    let sum = 0;
    for (const [runner, bytes] of this.#held) if (runner !== but) sum += bytes;
    return sum;
  }

  /**
   * Holds `bytes` for `runner` (replacing what it held); `reclaim` ends one idle runner and resolves
   * once it is gone (false: none is left), and is called while the others' limits leave no room.
   * Throws UnavailableError, naming the budget, when even then they do not fit.
   */
  async admit(runner: RunnerProcess, bytes: number, label: string, reclaim: () => Promise<boolean>): Promise<void> {
    if (bytes > this.allocatable)
      throw new UnavailableError(
        `${label} asks ${mib(bytes)} (limits.runnerMemoryMb), more than this node's ${mib(this.allocatable)} allocatable to runners (HEARTH_NODE_MEMORY_MB less HEARTH_NODE_RESERVED_MB): lower limits.runnerMemoryMb`,
      );
    while (this.held(runner) + bytes > this.allocatable) if (!(await reclaim())) break;
    const held = this.held(runner);
    if (held + bytes > this.allocatable)
      throw new UnavailableError(
        `${label} cannot start here: its runner's ${mib(bytes)} (limits.runnerMemoryMb) and the ${mib(held)} the other runners' limits hold pass this node's ${mib(this.allocatable)} allocatable to runners (HEARTH_NODE_MEMORY_MB less HEARTH_NODE_RESERVED_MB); scale another function to zero, lower limits.runnerMemoryMb, or add a node`,
      );
    this.#held.set(runner, bytes);
  }

  /** The runner ended: its limit is free again. */
  release(runner: RunnerProcess): void {
    this.#held.delete(runner);
  }
}
