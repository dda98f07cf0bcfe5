/**
 * Issue 43's targets for bench:ceiling, measured as pairs: a function URL's route and the KServe
 * route it is held against, run one after the other on the same node, in rounds whose order
 * alternates (AB, BA, …), each round giving its own ratio. The median of the rounds is the figure;
 * the lowest and highest say how far apart the rounds were. On this shared 2-core machine one cell
 * of each, minutes apart, differed by up to ±30% on the same code: a pair's rounds see the same
 * minutes.
 */
import { median, round } from './flags.js';
import type { LoadResult } from './load.js';

/** One route's cell under load at `concurrency` for `seconds`. */
export type PairSide = (concurrency: number, seconds: number) => Promise<LoadResult>;

export interface Pair {
  target: string;
  /** `ratio`: the function URL's req/s ÷ the reference's (≥ goal); `added_ms`: its p50 − the reference's (≤ goal). */
  measure: 'ratio' | 'added_ms';
  goal: number;
  concurrency: number;
  seconds: number;
  fn: PairSide;
  reference: PairSide;
}

export interface PairResult {
  target: string;
  measure: Pair['measure'];
  goal: number;
  rounds: number[];
  median: number;
  min: number;
  max: number;
  met: boolean;
}

/** Runs each pair `rounds` times, alternating which side goes first; prints and returns each one's figures. */
export async function runPairs(pairs: Pair[], rounds: number): Promise<PairResult[]> {
  const results: PairResult[] = [];
  for (const p of pairs) {
    const values: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const fnFirst = i % 2 === 0;
      const first = await (fnFirst ? p.fn : p.reference)(p.concurrency, p.seconds);
      const second = await (fnFirst ? p.reference : p.fn)(p.concurrency, p.seconds);
      const [f, r] = fnFirst ? [first, second] : [second, first];
      values.push(p.measure === 'ratio' ? round(f.rps / r.rps, 3) : round(f.p50 - r.p50, 3));
    }
    const m = round(median(values), 3);
    const result: PairResult = {
      target: p.target,
      measure: p.measure,
      goal: p.goal,
      rounds: values,
      median: m,
      min: Math.min(...values),
      max: Math.max(...values),
      met: p.measure === 'ratio' ? m >= p.goal : m <= p.goal,
    };
    results.push(result);
    const unit = p.measure === 'ratio' ? '×' : ' ms';
    console.log(
      `  ${result.met ? 'met   ' : 'MISSED'} ${p.target}: median ${p.measure === 'added_ms' && m >= 0 ? '+' : ''}${m}${unit} (goal ${p.measure === 'ratio' ? '≥' : '≤'} ${p.goal}${unit}; ${rounds} rounds ${result.min}…${result.max})`,
    );
  }
  return results;
}
