/** What every verb of the CLI shares: the client for the node the global options name, and printing. */
import { InvalidArgumentError } from 'commander';

import type { Hearth } from '../client.js';

export interface CliContext {
  /** A client for the node (--url, --api-key, or HEARTH_URL, HEARTH_API_KEY). */
  client(): Hearth;
  /** Whether --json was given. */
  json(): boolean;
  /** `value` as JSON with --json, else what `table` makes of it. */
  print(value: unknown, table: () => string): void;
  /** An option parser for a whole number ≥ 0 (`what` names it in the error). */
  integer(what: string): (value: string) => number;
}

export const integer =
  (what: string) =>
  (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${what} must be a whole number`);
    return n;
  };
