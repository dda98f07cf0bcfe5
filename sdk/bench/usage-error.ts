/** A bench asked for something that cannot run (a bad sweep, no input to send): the CLI exits 2 with it. */
export class BenchUsageError extends RangeError {
  override readonly name = 'BenchUsageError';
}
