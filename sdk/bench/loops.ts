/**
 * The two ways a step loads the server. Closed loop (perf_analyzer's --concurrency-range): exactly
 * `concurrency` requests in flight, each answer followed at once by the next request. Open loop
 * (its --request-rate-range): sends at fixed times, `rate` a second, whatever the answers do; a send
 * that goes out more than 1 ms after its time (the timer was late, or `maxInFlight` requests were
 * all waiting) counts as late, and its latency is timed from when it went out, as perf_analyzer does.
 *
 * Both run on callbacks, not promises, and time with performance.now(): what the client spends per
 * request is what the report states as its own overhead (process CPU over the step ÷ requests).
 */
import type { Done, Sender } from './http-target.js';
import { Samples } from './samples.js';

/** What one step measured. Latencies (ms) are of successful requests. */
export interface LoopResult {
  samples: Samples;
  requests: number;
  ok: number;
  errors: Record<string, number>;
  messages: Record<string, string>;
  seconds: number;
  /** This process's CPU (user + system) over the step, µs. */
  cpuUs: number;
  late?: number;
  /** Rate mode: how many timers it armed to wake for a send (about one a request, not a spin). */
  wakeups?: number;
}

/** How long or how many, and what to call as it runs (done so far, ms elapsed), about 4 times a second. */
export interface LoopLimits {
  durationMs?: number;
  requests?: number;
  onTick?: (done: number, elapsedMs: number) => void;
}

/** A send is late past this many ms after its time. */
const LATE_MS = 1;
/** A send due within this many ms is waited for by spinning, not by another timer. */
const SPIN_MS = 0.1;

function newResult(): LoopResult {
  return { samples: new Samples(), requests: 0, ok: 0, errors: {}, messages: {}, seconds: 0, cpuUs: 0 };
}

/** The bookkeeping both loops share: a start, a record per answer, and the end. */
function measure(limits: LoopLimits, resolve: (r: LoopResult) => void) {
  const r = newResult();
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  let last = t0;
  const ticker = limits.onTick
    ? setInterval(() => limits.onTick?.(r.requests, performance.now() - t0), 250)
    : undefined;
  return {
    t0,
    result: r,
    record(start: number, code: string | undefined, message?: string): void {
      last = performance.now();
      r.requests++;
      if (code === undefined) {
        r.ok++;
        r.samples.add(last - start);
        return;
      }
      r.errors[code] = (r.errors[code] ?? 0) + 1;
      if (message !== undefined && !(code in r.messages)) r.messages[code] = message;
    },
    finish(): void {
      if (ticker) clearInterval(ticker);
      const used = process.cpuUsage(cpu);
      r.cpuUs = used.user + used.system;
      r.seconds = (last - t0) / 1000;
      limits.onTick?.(r.requests, last - t0);
      resolve(r);
    },
  };
}

/** Closed loop: `concurrency` requests in flight until the duration has passed or `requests` were sent. */
export function closedLoop(sender: Sender, concurrency: number, limits: LoopLimits): Promise<LoopResult> {
  return new Promise((resolve) => {
    const m = measure(limits, resolve);
    const end = limits.durationMs === undefined ? Number.POSITIVE_INFINITY : m.t0 + limits.durationMs;
    const total = limits.requests ?? Number.POSITIVE_INFINITY;
    let issued = 0;
    let running = concurrency;
    const next = (): void => {
      if (issued >= total || performance.now() >= end) {
        if (--running === 0) m.finish();
        return;
      }
      const start = performance.now();
      const done: Done = (code, message) => {
        m.record(start, code, message);
        next();
      };
      sender.send(issued++, done);
    };
    for (let i = 0; i < concurrency; i++) next();
  });
}

/**
 * Open loop: request k goes out at k / rate seconds, `rate × duration` of them (or `requests`),
 * at most `maxInFlight` at once. Every planned request is sent, late or not.
 */
export function openLoop(sender: Sender, rate: number, maxInFlight: number, limits: LoopLimits): Promise<LoopResult> {
  return new Promise((resolve) => {
    const m = measure(limits, resolve);
    const total = limits.requests ?? Math.round((rate * (limits.durationMs ?? 0)) / 1000);
    const interval = 1000 / rate;
    let sent = 0;
    let inFlight = 0;
    let late = 0;
    let timer: NodeJS.Timeout | undefined;
    if (total === 0) return m.finish();
    const answered = (start: number) => (code: string | undefined, message?: string) => {
      inFlight--;
      m.record(start, code, message);
      if (m.result.requests === total) {
        m.result.late = late;
        m.finish();
      } else if (!timer) pump();
    };
    const tick = (): void => {
      timer = undefined;
      pump();
    };
    const pump = (): void => {
      let now = performance.now();
      while (sent < total && inFlight < maxInFlight) {
        const due = m.t0 + sent * interval;
        if (due - now > SPIN_MS) break;
        // A timer woke a little early (libuv's clock is a millisecond one): spin the rest.
        while (now < due) now = performance.now();
        if (now - due > LATE_MS) late++;
        inFlight++;
        sender.send(sent++, answered(now));
      }
      if (sent >= total || inFlight >= maxInFlight || timer) return;
      // setTimeout, never setImmediate: a wait under 1 ms is rounded up to 1 ms, inside LATE_MS.
      m.result.wakeups = (m.result.wakeups ?? 0) + 1;
      timer = setTimeout(tick, Math.max(0, m.t0 + sent * interval - performance.now()));
    };
    pump();
  });
}
