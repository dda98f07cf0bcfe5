/**
 * `bench()`: load on a function URL, or a model over KServe v2 HTTP or gRPC, as Triton's
 * perf_analyzer measures one — a closed loop at each concurrency of a list or sweep, or an open loop
 * at each request rate — and per step the client's view (req/s, p50/p90/p99, errors by code), the
 * server's own split (its statistics' deltas: queue, compute, the hook's pre and post) and the
 * client's own CPU per request. `hearth bench` prints it.
 *
 * @example
 * import { bench, parseSweep } from '@hearth/sdk';
 *
 * const report = await bench({ name: 'tabular-mlp', concurrency: parseSweep('1:64:x2', 'concurrency', { min: 1, max: 1024 }), durationMs: 5000 });
 * for (const s of report.steps) console.log(s.step, s.reqPerS, s.latencyMs.p99, s.server?.queueUs);
 */
import { readFileSync } from 'node:fs';

import { Transport } from '../client/transport.js';
import type { LoopLimits, LoopResult } from './loops.js';
import { closedLoop, openLoop } from './loops.js';
import { settledSnapshot, split } from './server-stats.js';
import type { ResolvedTarget, TlsText } from './target.js';
import { resolveTarget } from './target.js';
import type { BenchOptions, BenchReport, BenchStep, ServerSplit } from './types.js';
import { BenchUsageError } from './usage-error.js';

export { MAX_BODIES, MAX_INPUT_FILE_BYTES, readBodies, splitBodies } from './inputs.js';
export { Samples } from './samples.js';
export { MAX_STEPS, parseSweep } from './sweep.js';
export type * from './types.js';
export { BenchUsageError } from './usage-error.js';

/** Rate mode's requests in flight at most, unless `maxInFlight` says. */
export const DEFAULT_MAX_IN_FLIGHT = 64;
const DEFAULT_DURATION_MS = 10_000;
const DEFAULT_WARMUP_MS = 1000;

function tlsText(o: BenchOptions): TlsText {
  const files = {
    ca: o.caFile ?? process.env.HEARTH_CA_FILE,
    cert: o.certFile ?? process.env.HEARTH_CLIENT_CERT,
    key: o.keyFile ?? process.env.HEARTH_CLIENT_KEY,
  };
  if (!files.ca && !files.cert && !files.key) return undefined;
  const read = (f: string | undefined) => (f ? readFileSync(f, 'utf8') : undefined);
  return { ca: read(files.ca), cert: read(files.cert), key: read(files.key) };
}

function checkOptions(o: BenchOptions): void {
  if (o.rate && o.concurrency) throw new BenchUsageError('give --concurrency or --rate, not both');
  if (o.durationMs !== undefined && !(o.durationMs > 0)) throw new BenchUsageError('--duration must be above 0');
  if (o.requests !== undefined && !(Number.isInteger(o.requests) && o.requests > 0))
    throw new BenchUsageError('--requests must be a whole number above 0');
  for (const c of o.concurrency ?? [])
    if (!(Number.isInteger(c) && c > 0)) throw new BenchUsageError('--concurrency must be whole numbers above 0');
  for (const r of o.rate ?? []) if (!(r > 0)) throw new BenchUsageError('--rate must be above 0');
  if (o.maxInFlight !== undefined && !(Number.isInteger(o.maxInFlight) && o.maxInFlight >= 1 && o.maxInFlight <= 4096))
    throw new BenchUsageError('--max-in-flight must be a whole number from 1 to 4096');
  if (o.timeoutMs !== undefined && !(o.timeoutMs > 0)) throw new BenchUsageError('--timeout must be above 0');
  if (o.warmupMs !== undefined && !(o.warmupMs >= 0)) throw new BenchUsageError('--warmup must be 0 or more');
}

/** Runs every step in turn; throws before the first if the target or its inputs cannot be resolved. */
export async function bench(o: BenchOptions): Promise<BenchReport> {
  checkOptions(o);
  const tls = tlsText(o);
  const node = new Transport({
    url: o.url,
    apiKey: o.apiKey,
    caFile: o.caFile,
    certFile: o.certFile,
    keyFile: o.keyFile,
  });
  const target = await resolveTarget(o, node, tls);
  const plan = o.rate
    ? o.rate.map((rate) => ({ step: `rate=${rate}`, rate }))
    : (o.concurrency ?? [1]).map((concurrency) => ({ step: `c=${concurrency}`, concurrency }));
  const steps: BenchStep[] = [];
  for (const s of plan) steps.push(await runStep(o, target, s));
  return {
    name: o.name,
    protocol: o.protocol ?? 'function',
    target: target.target,
    input: target.input,
    mode: o.rate ? 'rate' : 'concurrency',
    steps,
  };
}

type Planned = { step: string; concurrency?: number; rate?: number };

async function runStep(o: BenchOptions, target: ResolvedTarget, s: Planned): Promise<BenchStep> {
  const connections = s.concurrency ?? o.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
  const sender = await target.sender(connections);
  const loop = (limits: LoopLimits) =>
    s.rate !== undefined ? openLoop(sender, s.rate, connections, limits) : closedLoop(sender, connections, limits);
  try {
    const warmupMs = o.warmupMs ?? DEFAULT_WARMUP_MS;
    if (warmupMs > 0) {
      o.onProgress?.({ kind: 'warmup', step: s.step });
      await loop({ durationMs: warmupMs });
    }
    // The server's counters around the measured part only: the warm-up's answers are all in.
    const before = await target.stats?.().catch(() => undefined);
    const durationMs = o.requests === undefined ? (o.durationMs ?? DEFAULT_DURATION_MS) : o.durationMs;
    const total = o.requests ?? (s.rate !== undefined ? Math.round((s.rate * durationMs!) / 1000) : undefined);
    const r = await loop({
      durationMs,
      requests: o.requests,
      onTick: (done, elapsedMs) =>
        o.onProgress?.({
          kind: 'step',
          step: s.step,
          done,
          total,
          elapsedMs,
          totalMs: o.requests ? undefined : durationMs,
        }),
    });
    const after = before && target.stats && (await settledSnapshot(target.stats, before, r.ok).catch(() => undefined));
    const result = stepResult(s, r, before && after ? split(before, after) : undefined);
    o.onProgress?.({ kind: 'stepDone', step: s.step, result });
    return result;
  } finally {
    await sender.close();
  }
}

const ms = (v: number | undefined) => (v === undefined ? undefined : Math.round(v * 1000) / 1000);

function stepResult(s: Planned, r: LoopResult, server: ServerSplit | undefined): BenchStep {
  const q = (p: number) => ms(r.samples.percentile(p));
  return {
    ...s,
    requests: r.requests,
    ok: r.ok,
    errors: r.errors,
    errorMessages: r.messages,
    seconds: Math.round(r.seconds * 1000) / 1000,
    reqPerS: r.seconds > 0 ? Math.round((r.requests / r.seconds) * 10) / 10 : 0,
    latencyMs: { p50: q(50), p90: q(90), p99: q(99), mean: ms(r.samples.mean()), max: ms(r.samples.max()) },
    ...(r.late === undefined ? {} : { late: r.late }),
    clientCpuUs: r.requests > 0 ? Math.round((r.cpuUs / r.requests) * 10) / 10 : 0,
    clientCpuPercent: r.seconds > 0 ? Math.round(r.cpuUs / r.seconds / 1000) / 10 : 0,
    ...(server ? { server } : {}),
  };
}
