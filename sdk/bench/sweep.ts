/**
 * The steps of a bench run, as perf_analyzer's ranges: a list (`1,8,32`), a doubling sweep
 * (`1:64:x2` — 1, 2, 4, … 64), or an arithmetic one (`1:32:+8` — 1, 9, 17, 25); lists and sweeps
 * may be mixed (`1,4:16:x2`). Steps keep the order given, without repeats.
 */
import { BenchUsageError } from './usage-error.js';

/** The most steps one run may take (a sweep that would make more is refused). */
export const MAX_STEPS = 256;

/** A list or sweep of numbers in [min, max]: `what` names the option in errors. */
export function parseSweep(
  text: string,
  what: string,
  limits: { min: number; max: number; whole?: boolean },
): number[] {
  const steps: number[] = [];
  const check = (n: number, part: string): number => {
    if (!Number.isFinite(n) || n < limits.min || n > limits.max || (limits.whole !== false && !Number.isInteger(n)))
      throw new BenchUsageError(
        `${what}: "${part}" is not a ${limits.whole === false ? 'number' : 'whole number'} from ${limits.min} to ${limits.max}`,
      );
    return n;
  };
  const push = (n: number) => {
    if (!steps.includes(n)) steps.push(n);
    if (steps.length > MAX_STEPS) throw new BenchUsageError(`${what}: more than ${MAX_STEPS} steps`);
  };
  if (text.trim() === '') throw new BenchUsageError(`${what}: give a list (1,8,32) or a sweep (1:64:x2, 1:32:+8)`);
  for (const raw of text.split(',')) {
    const part = raw.trim();
    const sweep = /^([^:]+):([^:]+):([x+*])([^:]+)$/.exec(part);
    if (!sweep) {
      if (part.includes(':'))
        throw new BenchUsageError(`${what}: "${part}" is not a sweep: write START:END:xFACTOR or START:END:+STEP`);
      push(check(num(part), part));
      continue;
    }
    const [, a, b, op, by] = sweep as unknown as [string, string, string, string, string];
    const start = check(num(a), part);
    const end = check(num(b), part);
    const step = num(by);
    if (end < start) throw new BenchUsageError(`${what}: "${part}" ends below its start`);
    const grows = op === '+' ? step > 0 : step > 1;
    if (!Number.isFinite(step) || !grows)
      throw new BenchUsageError(`${what}: "${part}" must grow: a factor above 1 (x2) or a step above 0 (+8)`);
    const whole = limits.whole !== false;
    if (whole && op === '+' && !Number.isInteger(step))
      throw new BenchUsageError(
        `${what}: "${part}" steps by ${by}: a concurrency is a whole number, so step by a whole number`,
      );
    // How many steps, counted before making any: a tiny step or factor would otherwise loop for
    // ages (and, rounded to whole numbers, repeat the same concurrency all the while).
    const top = end * (1 + 1e-9);
    const count = Math.floor(op === '+' ? (top - start) / step : Math.log(top / start) / Math.log(step)) + 1;
    if (!(count <= MAX_STEPS)) throw new BenchUsageError(`${what}: "${part}" makes more than ${MAX_STEPS} steps`);
    for (let i = 0; i < count; i++) {
      const n = op === '+' ? start + i * step : start * step ** i;
      if (n > top) break;
      push(whole ? Math.round(n) : Number(n.toPrecision(12)));
    }
  }
  return steps;
}

const num = (text: string): number => (/^\s*\d+(\.\d+)?\s*$/.test(text) ? Number(text) : Number.NaN);
