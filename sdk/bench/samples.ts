/**
 * Every latency of a step, kept (not bucketed): percentiles are exact, nearest-rank as
 * perf_analyzer reports them. A Float64Array that doubles as it fills: 8 bytes a request, so a
 * million requests in a step take 8 MB. Past MAX_SAMPLES a new sample replaces a kept one at
 * random (reservoir sampling: the kept ones stay a uniform sample of all), and `thinned` says so.
 */

/** The most latencies a step keeps before it thins (64 M requests' worth: 512 MB). */
export const MAX_SAMPLES = 64 * 2 ** 20;

export class Samples {
  #values: Float64Array;
  #length = 0;
  #seen = 0;
  #sorted = true;
  readonly #max: number;

  constructor(max = MAX_SAMPLES) {
    this.#max = max;
    this.#values = new Float64Array(Math.min(1024, max));
  }

  /** Adds one latency (any unit; the percentiles come back in it). */
  add(value: number): void {
    this.#seen++;
    if (this.#length === this.#values.length) {
      if (this.#length >= this.#max) {
        const at = Math.floor(Math.random() * this.#seen);
        if (at < this.#length) {
          this.#values[at] = value;
          this.#sorted = false;
        }
        return;
      }
      const grown = new Float64Array(Math.min(this.#values.length * 2, this.#max));
      grown.set(this.#values);
      this.#values = grown;
    }
    this.#values[this.#length++] = value;
    this.#sorted = false;
  }

  get count(): number {
    return this.#length;
  }

  /** Whether some samples were dropped (more than MAX_SAMPLES in one step). */
  get thinned(): boolean {
    return this.#seen > this.#length;
  }

  /** The nearest-rank percentile `p` (0 < p ≤ 100): the smallest sample with p% of them at or below it. */
  percentile(p: number): number | undefined {
    if (this.#length === 0) return undefined;
    const sorted = this.#sortedValues();
    const rank = Math.max(1, Math.ceil((p / 100) * this.#length));
    return sorted[Math.min(rank, this.#length) - 1];
  }

  mean(): number | undefined {
    if (this.#length === 0) return undefined;
    let sum = 0;
    for (let i = 0; i < this.#length; i++) sum += this.#values[i]!;
    return sum / this.#length;
  }

  max(): number | undefined {
    return this.#length === 0 ? undefined : this.#sortedValues()[this.#length - 1];
  }

  #sortedValues(): Float64Array {
    const view = this.#values.subarray(0, this.#length);
    if (!this.#sorted) {
      view.sort();
      this.#sorted = true;
    }
    return view;
  }
}
