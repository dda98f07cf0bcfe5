import { byteLength, clipBytes } from '../../../sdk/text.js';

/**
 * What a runner's output may cost the node's log and its function's log: at most `linesPerSecond`
 * lines and `bytesPerSecond` bytes, with bursts of a few seconds' worth, each line cut at
 * `maxLineBytes`. Lines past the budget are dropped and counted; the next line let through is
 * preceded by one saying how many were dropped. A token bucket per runner (one function version).
 */
export interface LineLimits {
  linesPerSecond: number;
  bytesPerSecond: number;
  /** How many seconds of budget may be spent at once. */
  burstSeconds: number;
  maxLineBytes: number;
}

export const DEFAULT_LINE_LIMITS: LineLimits = {
  linesPerSecond: 100,
  bytesPerSecond: 256 * 1024,
  burstSeconds: 5,
  maxLineBytes: 8 * 1024,
};

export class LineLimiter {
  readonly #l: LineLimits;
  readonly #now: () => number;
  #lines: number;
  #bytes: number;
  #at: number;
  #dropped = 0;

  constructor(limits: LineLimits = DEFAULT_LINE_LIMITS, now: () => number = () => performance.now()) {
    this.#l = limits;
    this.#now = now;
    this.#lines = limits.linesPerSecond * limits.burstSeconds;
    this.#bytes = limits.bytesPerSecond * limits.burstSeconds;
    this.#at = now();
  }

  /** Lines dropped since the last one let through. */
  get dropped(): number {
    return this.#dropped;
  }

  /**
   * The lines to log for `line`: none (dropped), the line (cut to maxLineBytes), or a line saying
   * how many were dropped before it, then the line.
   */
  take(line: string): string[] {
    this.#refill();
    const { maxLineBytes } = this.#l;
    const cut = clipBytes(line, maxLineBytes, `… (cut at ${maxLineBytes} bytes)`);
    const bytes = byteLength(cut);
    if (this.#lines < 1 || this.#bytes < bytes) {
      this.#dropped++;
      return [];
    }
    this.#lines -= 1;
    this.#bytes -= bytes;
    if (this.#dropped === 0) return [cut];
    return [this.#note(), cut];
  }

  /** The line saying how many were dropped, once the flood has stopped (nothing else to carry it). */
  flush(): string[] {
    this.#refill();
    if (this.#dropped === 0 || this.#lines < 1) return [];
    this.#lines -= 1;
    return [this.#note()];
  }

  #note(): string {
    const note = `hearth: ${this.#dropped} line(s) of output dropped (over ${this.#l.linesPerSecond} lines or ${this.#l.bytesPerSecond} bytes a second)`;
    this.#dropped = 0;
    return note;
  }

  #refill(): void {
    const now = this.#now();
    const elapsed = Math.max(0, now - this.#at) / 1000;
    this.#at = now;
    const { linesPerSecond, bytesPerSecond, burstSeconds } = this.#l;
    this.#lines = Math.min(linesPerSecond * burstSeconds, this.#lines + elapsed * linesPerSecond);
    this.#bytes = Math.min(bytesPerSecond * burstSeconds, this.#bytes + elapsed * bytesPerSecond);
  }
}

/**
 * `onLine` behind a LineLimiter: each line given is passed on, or dropped and counted; the count
 * comes before the next line let through, or on its own a second after a flood stops (nothing else
 * would carry it). Returns whether `line` itself was passed on.
 */
export function limitedLines(
  onLine: (line: string, notice: boolean) => void,
  limits: LineLimits = DEFAULT_LINE_LIMITS,
): (line: string) => boolean {
  const limiter = new LineLimiter(limits);
  let flush: NodeJS.Timeout | undefined;
  const later = () => {
    if (flush) return;
    flush = setTimeout(() => {
      flush = undefined;
      for (const note of limiter.flush()) onLine(note, true);
      if (limiter.dropped > 0) later();
    }, 1000);
    flush.unref();
  };
  return (line) => {
    const taken = limiter.take(line);
    if (taken.length === 0) {
      later();
      return false;
    }
    if (taken.length === 2) onLine(taken[0]!, true);
    onLine(taken.at(-1)!, false);
    return true;
  };
}
