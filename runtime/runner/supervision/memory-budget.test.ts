import { describe, expect, it } from 'vitest';

import { MemoryBudget, startCharge } from './memory-budget.js';
import type { RunnerProcess } from './runner-process.js';

const MIB = 2 ** 20;
/** Runners are only keys to the budget. */
const runner = () => ({}) as RunnerProcess;
/** What each runner uses, as the test sets it (undefined: not known). */
const used = new Map<RunnerProcess, number>();
const usage = async (r: RunnerProcess) => used.get(r);
const none = async () => false;
const charge = (limitMb: number, startMb: number) => ({ limitBytes: limitMb * MIB, startBytes: startMb * MIB });

describe('the memory budget of a node’s runners', () => {
  it('charges a start what it is expected to take: twice the model and the runner, at least 512 MiB, at most its limit', () => {
    expect(startCharge(8192 * MIB, 100 * MIB)).toBe(584 * MIB);
    expect(startCharge(8192 * MIB, 10 * MIB)).toBe(512 * MIB);
    expect(startCharge(8192 * MIB, 3000 * MIB)).toBe(6384 * MIB);
    expect(startCharge(1024 * MIB, 3000 * MIB)).toBe(1024 * MIB);
  });

  it('charges each runner its usage (at least its start, at most its limit), and refuses a start past the allocatable with the numbers', async () => {
    const budget = new MemoryBudget(10_240 * MIB, usage);
    const a = runner();
    const b = runner();
    // Three functions of 8 GiB limits fit in 10 GiB while they use little: limits are not what is charged.
    await budget.admit(a, charge(8192, 512), 'function a@1', none);
    await budget.admit(b, charge(8192, 512), 'function b@1', none);
    await budget.admit(runner(), charge(8192, 512), 'function c@1', none);
    expect(await budget.held()).toBe(1536 * MIB);
    // a grows to 1 GiB: charged what it uses; b to 20 GiB: charged its limit, no more.
    used.set(a, 1024 * MIB);
    used.set(b, 20_000 * MIB);
    expect(await budget.held(b)).toBe(1536 * MIB);
    await expect(budget.admit(runner(), charge(8192, 1024), 'function d@1', none)).rejects.toThrow(
      "function d@1 cannot start here: its start's 1024 MiB and the 9728 MiB the other runners use pass this node's 10240 MiB allocatable to runners",
    );
  });

  it('refuses a limit past the whole allocatable without reclaiming anything', async () => {
    const budget = new MemoryBudget(1024 * MIB, usage);
    let reclaimed = 0;
    await expect(
      budget.admit(runner(), charge(2048, 512), 'function big@1', async () => {
        reclaimed++;
        return true;
      }),
    ).rejects.toThrow(/asks 2048 MiB \(limits\.runnerMemoryMb\), more than this node's 1024 MiB allocatable/);
    expect(reclaimed).toBe(0);
  });

  it('reclaims idle runners until the start fits, and a runner re-admitted replaces what it held', async () => {
    const budget = new MemoryBudget(2048 * MIB, usage);
    const parked = [runner(), runner()];
    for (const r of parked) await budget.admit(r, charge(1024, 1024), 'parked', none);
    const reclaim = async () => {
      const r = parked.shift();
      if (r) budget.release(r);
      return r !== undefined;
    };
    const warm = runner();
    await budget.admit(warm, charge(2048, 1536), 'function warm@1', reclaim);
    // Both had to go: 1024 + 1536 is past 2048.
    expect(parked).toEqual([]);
    await budget.admit(warm, charge(2048, 2048), 'function warm@1', reclaim);
    expect(await budget.held()).toBe(2048 * MIB);
    budget.release(warm);
    expect(await budget.held()).toBe(0);
  });
});
