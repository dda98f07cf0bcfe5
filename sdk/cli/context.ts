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

const DURATION_UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A duration (`500ms`, `90s`, `10m`, `2h`, `1d`) in milliseconds; undefined if the text is not one. */
export function durationMs(text: string): number | undefined {
  const duration = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (!duration) return undefined;
  return Number(duration[1]) * DURATION_UNITS[duration[2] as keyof typeof DURATION_UNITS];
}

/** An option parser for a number in [min, max] (`what` names it in the error). */
export const numberIn =
  (what: string, min: number, max: number) =>
  (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n < min || n > max)
      throw new InvalidArgumentError(`${what} must be a number from ${min} to ${max}`);
    return n;
  };
