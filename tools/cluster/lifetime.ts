/**
 * What the local cluster started, to be closed in reverse order once: on Ctrl-C, on a failed start,
 * or when its last node has ended. A closer added once closing has begun runs at once (a child
 * whose start was under way when Ctrl-C came).
 */
export class Lifetime {
  readonly #closers: (() => Promise<unknown>)[] = [];
  #closing: Promise<void> | undefined;
  #done = false;
  readonly #report: (error: unknown) => void;
  #ended: () => void = () => undefined;
  /** Settles once every closer has run. */
  readonly ended = new Promise<void>((resolve) => {
    this.#ended = resolve;
  });

  constructor(report: (error: unknown) => void) {
    this.#report = report;
  }

  get closing(): boolean {
    return this.#closing !== undefined;
  }

  /** `close` runs when the lifetime ends (now, if it has ended). */
  defer(close: () => Promise<unknown>): void {
    if (this.#done) void close().catch(this.#report);
    else this.#closers.push(close);
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      for (let close = this.#closers.pop(); close; close = this.#closers.pop()) await close().catch(this.#report);
      this.#done = true;
      this.#ended();
    })();
    return this.#closing;
  }
}
