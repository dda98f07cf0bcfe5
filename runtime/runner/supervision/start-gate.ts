/**
 * At most `limit` tasks at once, the others waiting in the order they came: the runner host's
 * starts, one per core (a start is CPU: Node's boot, the jail's setup, the runtime's first touch).
 */
export class StartGate {
  readonly #limit: number;
  #busy = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(limit: number) {
    this.#limit = Math.max(1, limit);
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#busy < this.#limit) this.#busy++;
    // A slot is handed on as it frees (#busy unchanged), so no later caller takes it first.
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#busy--;
    }
  }
}
