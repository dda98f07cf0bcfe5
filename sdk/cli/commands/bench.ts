/**
 * `hearth bench NAME`: load on a function URL or a model over KServe v2 HTTP or gRPC, as Triton's
 * perf_analyzer: a closed loop at each concurrency of a list or sweep (or an open loop at each
 * rate), a table per step with the server's own split, `--json` / `--csv` for programs. The engine
 * is the SDK's `bench()` (../../bench/); this file parses and prints.
 */
import { SingleBar } from 'cli-progress';
import { type Command, CommanderError, InvalidArgumentError } from 'commander';

import type { BenchOptions, BenchProgress, BenchProtocol } from '../../bench/index.js';
import { parseSweep } from '../../bench/sweep.js';
import { BenchUsageError } from '../../bench/usage-error.js';
import { benchCsv, benchTable } from '../bench-format.js';
import type { CliContext } from '../context.js';
import { durationMs } from '../context.js';

interface BenchFlags {
  protocol: BenchProtocol;
  path?: string;
  grpcUrl?: string;
  concurrency?: number[];
  rate?: number[];
  maxInFlight?: number;
  duration?: number;
  requests?: number;
  warmup?: number;
  input?: 'random' | 'example' | 'file';
  inputFile?: string;
  contentType?: string;
  format?: 'json' | 'binary';
  version?: number;
  timeout?: number;
  csv?: boolean;
}

const sweep = (what: string, whole: boolean) => (text: string) => {
  try {
    return parseSweep(text, what, whole ? { min: 1, max: 4096 } : { min: 0.001, max: 1_000_000, whole: false });
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
};

const duration = (what: string, zero: boolean) => (text: string) => {
  const value = text.trim() === '0' && zero ? 0 : durationMs(text);
  if (value === undefined || (!zero && value <= 0))
    throw new InvalidArgumentError(`${what} must be a duration such as 500ms, 10s, 2m${zero ? ', or 0' : ''}`);
  return value;
};

const oneOf = (what: string, values: string[]) => (text: string) => {
  if (!values.includes(text)) throw new InvalidArgumentError(`${what} must be one of ${values.join(', ')}`);
  return text;
};

/** `hearth bench` */
export function register(program: Command, context: CliContext): void {
  program
    .command('bench <name>')
    .description(
      "load a function URL or a model (KServe v2 HTTP or gRPC) and report req/s, p50/p90/p99, errors by code and the server's own split, per step",
    )
    .option(
      '--protocol <p>',
      'function (its URL, through the hook), http (KServe v2) or grpc (ModelInfer)',
      oneOf('--protocol', ['function', 'http', 'grpc']),
      'function',
    )
    .option('--path <route>', "any HTTP route instead (POST --url + route with --input-file's bodies; no server split)")
    .option('--grpc-url <host:port>', "the node's gRPC address (default: --url's host, port 8001)")
    .option(
      '--concurrency <steps>',
      'closed loop: requests in flight, a list (1,8,32) or a sweep (1:64:x2, 1:32:+8); default 1',
      sweep('--concurrency', true),
    )
    .option(
      '--rate <steps>',
      'open loop instead: requests a second, a list or a sweep (100:400:+100)',
      sweep('--rate', false),
    )
    .option(
      '--max-in-flight <n>',
      'with --rate: most requests in flight (and connections), default 64',
      context.integer('--max-in-flight'),
    )
    .option(
      '--duration <d>',
      'each step lasts this long (default 10s unless --requests)',
      duration('--duration', false),
    )
    .option('--requests <n>', 'each step sends exactly this many requests', context.integer('--requests'))
    .option(
      '--warmup <d>',
      'load before each step, not counted: a duration, 0 for none (default 1s)',
      duration('--warmup', true),
    )
    .option(
      '--input <source>',
      "random (tensors of the spec's or metadata's dtypes and shapes), example (the spec's), or file",
      oneOf('--input', ['random', 'example', 'file']),
    )
    .option(
      '--input-file <path>',
      'bodies: one JSON document (the whole file), one JSON a line, or the whole file as one raw body',
    )
    .option('--content-type <type>', "a raw --input-file body's content type (default application/octet-stream)")
    .option(
      '--format <f>',
      "with --protocol http: binary (Triton's binary tensors, default) or json",
      oneOf('--format', ['json', 'binary']),
    )
    .option('--version <n>', 'a version instead of the traffic split', context.integer('--version'))
    .option('--timeout <ms>', "a request's deadline, milliseconds (default 60000)", context.integer('--timeout'))
    .option('--csv', 'print CSV (a line per step)')
    .addHelpText(
      'after',
      '\nExamples:\n  hearth bench tabular-mlp --concurrency 1:64:x2 --duration 5s\n  hearth bench tabular-mlp --protocol grpc --concurrency 1,8,32\n  hearth bench tabular-mlp --rate 100:400:+100 --duration 10s\n  hearth bench image-classifier --input-file cat.jpg --content-type image/jpeg --json',
    )
    .action((name: string, o: BenchFlags, command: Command) => benchAction(context, name, o, command));
}

async function benchAction(context: CliContext, name: string, o: BenchFlags, command: Command): Promise<void> {
  const globals = command.optsWithGlobals() as {
    url?: string;
    apiKey?: string;
    caFile?: string;
    cert?: string;
    key?: string;
  };
  const progress = progressBar(name, !context.json() && !o.csv);
  // The engine (and undici, which it loads) only when a bench runs: the CLI's other verbs start without it.
  const { bench, readBodies } = await import('../../bench/index.js');
  try {
    const bodies = o.inputFile === undefined ? undefined : await readBodies(o.inputFile, o.contentType);
    const options: BenchOptions = {
      name,
      url: globals.url,
      apiKey: globals.apiKey,
      caFile: globals.caFile,
      certFile: globals.cert,
      keyFile: globals.key,
      protocol: o.protocol,
      path: o.path,
      grpcUrl: o.grpcUrl,
      concurrency: o.concurrency,
      rate: o.rate,
      maxInFlight: o.maxInFlight,
      durationMs: o.duration,
      requests: o.requests,
      warmupMs: o.warmup,
      timeoutMs: o.timeout,
      format: o.format,
      input: o.input,
      bodies,
      version: o.version,
      onProgress: progress.update,
    };
    const report = await bench(options);
    progress.stop();
    if (o.csv) console.log(benchCsv(report));
    else context.print(report, () => benchTable(report));
    // Every request failed: as a call that failed.
    if (report.steps.every((s) => s.ok === 0)) process.exitCode = 1;
  } catch (error) {
    progress.stop();
    if (error instanceof BenchUsageError) throw new CommanderError(2, 'hearth.usage', error.message);
    throw error;
  }
}

/** A bar on stderr (a terminal's only) for the step running: its time, or its requests with --requests. */
function progressBar(name: string, wanted: boolean): { update: (e: BenchProgress) => void; stop: () => void } {
  if (!wanted || !process.stderr.isTTY) return { update: () => {}, stop: () => {} };
  const bar = new SingleBar({
    format: `${name} {step} [{bar}] {done} requests`,
    hideCursor: true,
    clearOnComplete: true,
  });
  let started = false;
  return {
    update(e) {
      if (e.kind === 'warmup') {
        if (!started) bar.start(1, 0, { step: `${e.step} warm-up`, done: 0 });
        else bar.update(0, { step: `${e.step} warm-up`, done: 0 });
        started = true;
      } else if (e.kind === 'step') {
        const total = e.total ?? e.totalMs ?? 1;
        if (!started) bar.start(total, 0, { step: e.step, done: 0 });
        started = true;
        bar.setTotal(total);
        bar.update(e.total !== undefined ? e.done : Math.min(e.elapsedMs, total), { step: e.step, done: e.done });
      }
    },
    stop() {
      if (started) bar.stop();
      started = false;
    },
  };
}
