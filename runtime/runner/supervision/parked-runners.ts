/**
 * Runners whose pool stopped (scale to zero, unload), kept for their version's next cold start, for
 * PARK_MS: a fresh process pays its first model load and forward again (page faults, LibTorch's
 * first-run work) — measured, ResNet-50 loaded in 0.46 s in a new process and 0.11 s in one that
 * had loaded it before. Only that version ever takes it back.
 */
import { functionOfKey } from '../../../sdk/spec/version-key.js';
import type { RunnerProcess } from './runner-process.js';

/** How long, and how many, stopped runners wait for their version's next cold start. */
const PARK_MS = 5 * 60_000;
const MAX_PARKED = 4;

interface Parked {
  runner: RunnerProcess;
  timer: NodeJS.Timeout;
}

export class ParkedRunners {
  /** By version key (`name@version`), oldest first. */
  readonly #parked = new Map<string, Parked>();

  /** Keeps `runner` for `version` (a runner already kept for it ends), the oldest past MAX_PARKED ending. */
  park(runner: RunnerProcess, version: string): void {
    const previous = this.#parked.get(version);
    if (previous) void previous.runner.close(1000);
    const timer = setTimeout(() => {
      if (this.#parked.get(version)?.runner === runner) this.#parked.delete(version);
      void runner.close(1000);
    }, PARK_MS);
    timer.unref();
    this.#parked.set(version, { runner, timer });
    while (this.#parked.size > MAX_PARKED) {
      const [oldest, entry] = this.#parked.entries().next().value as [string, Parked];
      this.#parked.delete(oldest);
      clearTimeout(entry.timer);
      void entry.runner.close(1000);
    }
  }

  /** The runner kept for `version`, if it is still alive. */
  take(version: string): RunnerProcess | undefined {
    const parked = this.#parked.get(version);
    if (!parked) return undefined;
    this.#parked.delete(version);
    clearTimeout(parked.timer);
    return parked.runner.alive ? parked.runner : undefined;
  }

  /** Ends the runners kept for a function's versions (it was deleted). */
  discard(name: string): void {
    for (const [version, entry] of this.#parked) {
      if (functionOfKey(version) !== name) continue;
      this.#parked.delete(version);
      clearTimeout(entry.timer);
      void entry.runner.close(1000);
    }
  }

  /**
   * Ends the runner parked longest (another function's start needs its memory); resolves once it
   * is gone, its folder and cgroup too, or false when none is parked.
   */
  async reclaim(): Promise<boolean> {
    const oldest = this.#parked.entries().next().value as [string, Parked] | undefined;
    if (!oldest) return false;
    const [version, entry] = oldest;
    this.#parked.delete(version);
    clearTimeout(entry.timer);
    await entry.runner.close(1000);
    await entry.runner.cleaned;
    return true;
  }

  /** Forgets them all (the host is closing: it ends every live runner itself). */
  clear(): void {
    for (const entry of this.#parked.values()) clearTimeout(entry.timer);
    this.#parked.clear();
  }
}
