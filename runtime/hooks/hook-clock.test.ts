import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { watchHookTime } from './hook-clock.js';
import { HOOK_LOADING, HOOK_RUNNING } from './messages.js';

/** What a hook thread does: says how far it got (worker.ts report). */
function report(progress: Int32Array, stage: number): void {
  Atomics.store(progress, 0, stage);
  Atomics.notify(progress, 0);
}

/** Lets Atomics.waitAsync's settled waits run their continuations. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('a hook call’s time limit', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('does not run while the task waits for a thread, however long', async () => {
    const progress = new Int32Array(new SharedArrayBuffer(4));
    const expire = vi.fn();
    const stop = watchHookTime(progress, 100, 60_000, expire);
    vi.advanceTimersByTime(10 * 60_000);
    expect(expire).not.toHaveBeenCalled();
    stop();
  });

  it('gives a new thread the load limit to import the hook, then the call its own limit from its start', async () => {
    const progress = new Int32Array(new SharedArrayBuffer(4));
    const expire = vi.fn();
    const stop = watchHookTime(progress, 100, 60_000, expire);
    vi.advanceTimersByTime(5000); // queued
    report(progress, HOOK_LOADING);
    await settle();
    vi.advanceTimersByTime(30_000); // a slow import: more than the call's limit, within the load limit
    expect(expire).not.toHaveBeenCalled();
    report(progress, HOOK_RUNNING);
    await settle();
    vi.advanceTimersByTime(99);
    expect(expire).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(expire).toHaveBeenCalledTimes(1);
    stop();
  });

  it('ends a load that runs past the load limit', async () => {
    const progress = new Int32Array(new SharedArrayBuffer(4));
    const expire = vi.fn();
    const stop = watchHookTime(progress, 100, 60_000, expire);
    report(progress, HOOK_LOADING);
    await settle();
    vi.advanceTimersByTime(60_000);
    expect(expire).toHaveBeenCalledTimes(1);
    stop();
  });

  it('counts from the stage already reported, and never expires once stopped', async () => {
    const progress = new Int32Array(new SharedArrayBuffer(4));
    report(progress, HOOK_RUNNING);
    const expire = vi.fn();
    const stop = watchHookTime(progress, 100, 60_000, expire);
    vi.advanceTimersByTime(50);
    stop();
    vi.advanceTimersByTime(1000);
    expect(expire).not.toHaveBeenCalled();
  });
});
