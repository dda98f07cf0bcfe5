/**
 * How a runner sends its pool's snapshot to the node: every 250 ms while it changes. An unchanged
 * snapshot is not sent again (but every 5 s), and the timer slows to once a second; work from the
 * node (a call, an instance added or removed) brings it back to 250 ms, and a change in the pool by
 * itself (an instance loaded, its state) is sent at once. An idle runner wakes once a second, not
 * four times, and its node reads nothing new — nor asks (supervision/runner-pool.ts `refresh`).
 */
const SNAPSHOT_MS = 250;
const IDLE_SNAPSHOT_MS = 1000;
const RESEND_MS = 5000;

export class SnapshotSender<T> {
  readonly #take: () => T;
  readonly #send: (snapshot: T) => void;
  #timer: NodeJS.Timeout | undefined;
  #every = SNAPSHOT_MS;
  #last = { text: '', at: -Infinity };

  constructor(take: () => T, send: (snapshot: T) => void) {
    this.#take = take;
    this.#send = send;
  }

  start(): void {
    this.#last = { text: '', at: -Infinity };
    this.#every = SNAPSHOT_MS;
    this.#schedule();
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Work from the node (a call, an instance added or removed): snapshots every 250 ms again. */
  wake(): void {
    if (this.#timer === undefined || this.#every === SNAPSHOT_MS) return;
    this.#every = SNAPSHOT_MS;
    this.#schedule();
  }

  /**
   * Something changed in the pool by itself (an instance loaded, its state): a snapshot as soon as
   * the pool's own update is done (a timer of 0), then every 250 ms while it changes.
   */
  now(): void {
    if (this.#timer === undefined) return;
    this.#every = SNAPSHOT_MS;
    this.#schedule(0);
  }

  #tick(): void {
    const next = this.#take();
    const text = JSON.stringify(next);
    const now = performance.now();
    const same = text === this.#last.text;
    if (!same || now - this.#last.at >= RESEND_MS) {
      this.#last = { text, at: now };
      this.#send(next);
    }
    this.#every = same ? Math.min(this.#every * 2, IDLE_SNAPSHOT_MS) : SNAPSHOT_MS;
    this.#schedule();
  }

  #schedule(delay = this.#every): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#tick(), delay);
    this.#timer.unref();
  }
}
