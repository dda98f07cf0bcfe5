import { describe, expect, it } from 'vitest';

import { MemoryBudget } from './memory-budget.js';
import type { RunnerProcess } from './runner-process.js';

const MIB = 2 ** 20;
/** Runners are only keys to the budget. */
const runner = () => ({}) as RunnerProcess;

describe('the memory budget of a node’s runners', () => {
  it('admits limits up to the allocatable, and refuses the one past it with the numbers', async () => {
    const budget = new MemoryBudget(2560 * MIB);
    const none = async () => false;
    await budget.admit(runner(), 1024 * MIB, 'function a@1', none);
    await budget.admit(runner(), 1024 * MIB, 'function b@1', none);
    await expect(budget.admit(runner(), 1024 * MIB, 'function c@1', none)).rejects.toThrow(
      "function c@1 cannot start here: its runner's 1024 MiB (limits.runnerMemoryMb) and the 2048 MiB the other runners' limits hold pass this node's 2560 MiB allocatable to runners",
    );
    expect(budget.held()).toBe(2048 * MIB);
  });

  it('refuses a limit past the whole allocatable without reclaiming anything', async () => {
    const budget = new MemoryBudget(1024 * MIB);
    let reclaimed = 0;
    await expect(
      budget.admit(runner(), 2048 * MIB, 'function big@1', async () => {
        reclaimed++;
        return true;
      }),
    ).rejects.toThrow(/asks 2048 MiB \(limits\.runnerMemoryMb\), more than this node's 1024 MiB allocatable/);
    expect(reclaimed).toBe(0);
  });

  it('reclaims idle runners until the limit fits, and a runner re-admitted replaces what it held', async () => {
    const budget = new MemoryBudget(2048 * MIB);
    const parked = [runner(), runner()];
    for (const r of parked) await budget.admit(r, 1024 * MIB, 'parked', async () => false);
    const reclaim = async () => {
      const r = parked.shift();
      if (r) budget.release(r);
      return r !== undefined;
    };
    const warm = runner();
    await budget.admit(warm, 1536 * MIB, 'function warm@1', reclaim);
    // Both had to go: 1024 + 1536 is past 2048.
    expect(parked).toEqual([]);
    await budget.admit(warm, 2048 * MIB, 'function warm@1', reclaim);
    expect(budget.held()).toBe(2048 * MIB);
    budget.release(warm);
    expect(budget.held()).toBe(0);
  });
});
