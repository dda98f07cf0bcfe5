/**
 * `hearth deploy <dir>`: a function folder (or a Triton model folder) deployed as a new version, or
 * every model folder of a Triton repository root, a line each; with --canary, the node's verdict on
 * the new version waited for and shown.
 */
import { relative } from 'node:path';

import type { Command } from 'commander';
import { InvalidArgumentError, Option } from 'commander';

import type { Canary, CanaryRequest } from '../../api/index.js';
import { canarySide, splitShares } from '../../api/index.js';
import type { Hearth } from '../../client.js';
import { ModelLoadError } from '../../errors.js';
import type { CliContext } from '../context.js';
import { durationMs, numberIn } from '../context.js';
import type { Deployed } from '../deploy.js';
import { deployFolder, modelFolders } from '../deploy.js';
import { printable } from '../format.js';

const CANARY_POLL_MS = 1000;
/** How long past its window the CLI waits for a canary's decision before it leaves it to the node. */
const CANARY_GRACE_MS = 120_000;

/** The options as commander hands them to the action. */
interface DeployFlags {
  keepTraffic?: boolean;
  canary?: number;
  canaryWindow: number;
  canaryMaxErrorRate?: number;
  canaryMaxP99?: number | 'off';
  canaryMinCalls?: number;
  wait?: boolean;
  typecheck: boolean;
  device?: string;
  instances?: number;
  threads?: number;
  min?: number;
  max?: number;
  queueSize?: number;
  hookQueueSize?: number;
  hookTimeoutMs?: number;
  hookMemoryMb?: number;
  runnerMemoryMb?: number;
  forwardTimeoutMs?: number;
}

/** A version deployed, with its full URL (and its canary as decided, when it had one). */
type Shown = Deployed & { url: string };

const windowOption = (value: string): number => {
  const ms = durationMs(value);
  if (ms === undefined || ms < 1000 || ms > 86_400_000)
    throw new InvalidArgumentError('--canary-window is a duration from 1s to 24h (30s, 5m, 1h)');
  return ms;
};

/** --canary-max-p99: a ratio from 1 to 1000, or off (latency not judged). */
const latencyLimit = (value: string): number | 'off' => {
  if (value.trim().toLowerCase() === 'off') return 'off';
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 1 || n > 1000)
    throw new InvalidArgumentError('--canary-max-p99 is a ratio from 1 to 1000, or off');
  return n;
};

/** `hearth deploy` */
export function register(program: Command, context: CliContext): void {
  const command = program
    .command('deploy <dir>')
    .description(
      'validate, bundle the hook, upload what the node lacks, create a version, print its URL (a Triton model folder works too, and a repository root of them)',
    );
  trafficOptions(command, context.integer);
  command
    .option('--wait', 'wait until the version is warm on the node')
    .option('--no-typecheck', "deploy the hook without type-checking it against the SDK's declarations");
  specOptions(command, context.integer);
  command
    .addHelpText(
      'after',
      '\nExamples:\n  hearth deploy my-model --wait\n  hearth deploy my-model --canary 10 --canary-window 60s   # 10% for a minute, then promoted or rolled back\n  hearth deploy my-model --keep-traffic            # by hand: then hearth traffic my-model 1=90 2=10\n  hearth deploy my-model --device cpu --instances 2 --max 4 --forward-timeout-ms 5000\n  hearth deploy model_repository                  # every model folder of a Triton repository',
    )
    .action((dir: string, o: DeployFlags) => deployAction(context, dir, o));
}

/** How the new version takes traffic: --keep-traffic, or a canary and its limits. */
function trafficOptions(command: Command, integer: CliContext['integer']): void {
  command
    .option('--keep-traffic', 'create the version without moving traffic to it')
    .option(
      '--canary <percent>',
      "send this share of the traffic to the new version and watch it against the serving one's: rolled back on its own past the limits, else promoted",
      numberIn('--canary', 1, 99),
    )
    // commander adds "(default: …)" itself: the description does not say it again.
    .addOption(
      new Option('--canary-window <duration>', 'how long the canary is watched')
        .argParser(windowOption)
        .default(60_000, '60s'),
    )
    .option(
      '--canary-max-error-rate <points>',
      "roll back when the canary's error rate is this many percentage points over the serving version's (default 5)",
      numberIn('--canary-max-error-rate', 0, 100),
    )
    .option(
      '--canary-max-p99 <ratio>',
      "roll back when the canary's latency is over this multiple of the serving version's (default 1.5): at p99, or p90 or p50 when either side has too few calls to estimate it (1000, 100, 20); off: latency not judged, errors still are",
      latencyLimit,
    )
    .option(
      '--canary-min-calls <n>',
      'calls the canary must take to be judged; fewer by the end of the window roll it back (default 10)',
      integer('--canary-min-calls'),
    );
}

/** What overrides the spec: the device, instances, scaling, queues and limits. */
function specOptions(command: Command, integer: CliContext['integer']): void {
  command
    .option(
      '--device <device>',
      'run on this device whatever the spec says: cpu (a GPU config on a CPU node), cuda, cuda:N, auto',
    )
    .option('--instances <n>', 'instances started with the pool (spec instances.count)', integer('--instances'))
    .option('--threads <n>', 'LibTorch intra-op threads per forward (spec instances.threads)', integer('--threads'))
    .option('--min <n>', 'instances kept while idle, 0 scales to zero (spec scaling.minInstances)', integer('--min'))
    .option('--max <n>', "the autoscaler's ceiling (spec scaling.maxInstances)", integer('--max'))
    .option(
      '--queue-size <n>',
      'requests waiting for the batcher at most (spec batching.maxQueueSize)',
      integer('--queue-size'),
    )
    .option(
      '--hook-queue-size <n>',
      'requests waiting for a hook thread at most (spec limits.hookQueueSize)',
      integer('--hook-queue-size'),
    )
    .option(
      '--hook-timeout-ms <ms>',
      'limit of one hook call (spec limits.hookTimeoutMs, default 10000)',
      integer('--hook-timeout-ms'),
    )
    .option(
      '--hook-memory-mb <mb>',
      'memory of each hook (spec limits.hookMemoryMb, default 256)',
      integer('--hook-memory-mb'),
    )
    .option(
      '--runner-memory-mb <mb>',
      "resident memory of the function's runner process (spec limits.runnerMemoryMb, default 8192)",
      integer('--runner-memory-mb'),
    )
    .option(
      '--forward-timeout-ms <ms>',
      'a forward past this is a hang: the runner restarts (spec limits.forwardTimeoutMs, default 60000)',
      integer('--forward-timeout-ms'),
    );
}

async function deployAction(context: CliContext, dir: string, o: DeployFlags): Promise<void> {
  const hearth = context.client();
  if (o.canary !== undefined && o.keepTraffic)
    throw new InvalidArgumentError('--canary moves traffic: give --canary or --keep-traffic, not both');
  const canary = canaryRequest(o);
  const deploy = (folder: string) => deployOne(context, hearth, folder, o, canary);
  // A Triton repository root (model folders inside): each folder deployed, a line each, a summary.
  const folders = await modelFolders(dir);
  if (!folders) {
    const r = await deploy(dir);
    context.print(r, () => `${deployedLine(r)}\n${r.url}`);
    return;
  }
  await deployRepository(context, dir, folders, deploy);
}

/** The canary the flags ask for, if any. */
export function canaryRequest(o: DeployFlags): CanaryRequest | undefined {
  return o.canary === undefined
    ? undefined
    : {
        percent: o.canary,
        windowMs: o.canaryWindow,
        ...(o.canaryMaxErrorRate === undefined ? {} : { maxErrorRate: o.canaryMaxErrorRate }),
        ...(o.canaryMaxP99 === undefined ? {} : { maxP99Ratio: o.canaryMaxP99 }),
        ...(o.canaryMinCalls === undefined ? {} : { minCalls: o.canaryMinCalls }),
      };
}

/** One folder deployed: its notes said, a failed load thrown, its canary followed or its warm pool waited for. */
async function deployOne(
  context: CliContext,
  hearth: Hearth,
  folder: string,
  o: DeployFlags,
  canary: CanaryRequest | undefined,
): Promise<Shown> {
  const { json } = context;
  const r = await deployFolder(hearth, folder, {
    keepTraffic: o.keepTraffic,
    canary,
    typecheck: o.typecheck,
    device: o.device,
    overrides: {
      limits: {
        hookQueueSize: o.hookQueueSize,
        hookTimeoutMs: o.hookTimeoutMs,
        hookMemoryMb: o.hookMemoryMb,
        runnerMemoryMb: o.runnerMemoryMb,
        forwardTimeoutMs: o.forwardTimeoutMs,
      },
      instances: { count: o.instances, threads: o.threads },
      scaling: { minInstances: o.min, maxInstances: o.max },
      batching: { maxQueueSize: o.queueSize },
    },
    progress: !json() && process.stderr.isTTY,
  });
  if (!json()) for (const note of r.notes) process.stderr.write(`note: ${note}\n`);
  if (!json()) for (const warning of r.warnings ?? []) process.stderr.write(`warning: ${printable(warning)}\n`);
  if (r.status === 'failed')
    throw new ModelLoadError(
      `${r.name} v${r.version} failed to load: ${r.reason} (the whole error: hearth logs ${r.name} --version ${r.version})`,
    );
  if (r.canary) return awaitCanary(context, hearth, r, r.canary);
  if (o.wait) await waitWarm(hearth, r);
  return { ...r, url: `${hearth.url}${r.url}` };
}

/**
 * A deploy's canary followed to the node's decision: said on stderr as it began and as it ended; a
 * rollback thrown (after the JSON, with --json).
 */
async function awaitCanary({ json, print }: CliContext, hearth: Hearth, r: Deployed, c: Canary): Promise<Shown> {
  if (!json())
    process.stderr.write(
      `${r.name} v${r.version} ready: canary at ${c.percent}% for ${c.windowMs / 1000} s against ${Object.keys(
        c.baseline,
      )
        .map((v) => `v${v}`)
        .join('+')} (Ctrl-C stops waiting; the node keeps watching)\n`,
    );
  const decided = await followCanary(hearth, r.name, c, !json() && process.stderr.isTTY);
  const done = { ...r, canary: decided, url: `${hearth.url}${r.url}` };
  if (decided.state === 'rolled-back') {
    if (json()) print(done, () => '');
    // Not a HearthError: the verdict is no error code of the API's (the CLI prints none after it).
    throw new Error(rolledBackText(r, decided));
  }
  if (!json())
    process.stderr.write(
      decided.state === 'promoted'
        ? `canary passed: v${r.version} promoted to 100% (${printable(decided.reason ?? '')})\n`
        : decided.state === 'watching'
          ? `canary still watching after ${Math.round((c.windowMs + CANARY_GRACE_MS) / 1000)} s: the node decides it (hearth describe ${r.name})\n`
          : `canary ${decided.state}: ${printable(decided.reason ?? '')}\n`,
    );
  return done;
}

/**
 * A rollback in sentences: why, where the traffic is, and what to look at — the failed calls'
 * log only when errors decided it (a node before `cause`: when the canary had failed calls).
 */
export function rolledBackText(r: Pick<Deployed, 'name' | 'version'>, c: Canary): string {
  const reason = printable(c.reason ?? 'no reason recorded');
  const errors = c.cause ? c.cause === 'errors' : (c.observed?.canary.failed ?? 0) > 0;
  const next = errors
    ? ` Its failed calls: hearth logs ${r.name} --errors --version ${r.version}`
    : c.cause === 'calls'
      ? ' Send it more traffic, or give it a longer --canary-window or a lower --canary-min-calls.'
      : '';
  return `${r.name} v${r.version} was rolled back by its canary: ${reason}. Traffic is back on ${splitShares(c.baseline)}.${next}`;
}

/**
 * Waits for the node to decide a deploy's canary, showing what it sees on a terminal; resolves with
 * the decided canary (or the watching one, past its window and CANARY_GRACE_MS).
 */
async function followCanary(hearth: Hearth, name: string, started: Canary, live: boolean): Promise<Canary> {
  const until = Date.now() + started.windowMs + CANARY_GRACE_MS;
  let canary = started;
  while (Date.now() < until) {
    await new Promise((res) => setTimeout(res, CANARY_POLL_MS));
    const now = (await hearth.describe(name)).canary as Canary | undefined;
    if (!now || now.startedAt !== started.startedAt) {
      // Another deploy replaced it: this one is over, undecided by its own numbers.
      return { ...canary, state: 'cancelled', reason: 'another canary of this function replaced it' };
    }
    canary = now;
    if (canary.state !== 'watching') break;
    if (live && canary.observed) {
      const left = Math.max(0, Math.ceil((Date.parse(canary.startedAt) + canary.windowMs - Date.now()) / 1000));
      process.stderr.write(
        `\r\x1b[Kcanary v${canary.version}: ${canarySide(canary.observed.canary)} | serving: ${canarySide(canary.observed.baseline)} | ${left} s left`,
      );
    }
  }
  if (live) process.stderr.write('\r\x1b[K');
  return canary;
}

/** --wait: until the version has a warm pool (600 looks 200 ms apart at most, then on regardless). */
async function waitWarm(hearth: Hearth, r: Deployed): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const pools = (await hearth.describe(r.name)).pools;
    if (pools.some((p) => p.version === r.version && p.state === 'warm')) break;
    await new Promise((res) => setTimeout(res, 200));
  }
}

/** A deployed version in one line: name, version, status, and whether its model was uploaded. */
const deployedLine = (r: Shown): string =>
  `${r.name} v${r.version} ${r.status}${r.status === 'pending' && r.reason ? `: ${r.reason}` : ''}${r.uploaded.model ? '' : ' (model unchanged, not uploaded)'}`;

/** Every model folder of a repository root, a line each (one that fails does not stop the others), and a summary. */
async function deployRepository(
  { json, print }: CliContext,
  dir: string,
  folders: string[],
  deploy: (folder: string) => Promise<Shown>,
): Promise<void> {
  const results: ({ folder: string } & ({ deployed: Shown } | { error: string }))[] = [];
  for (const folder of folders) {
    const shown = relative(dir, folder);
    try {
      const r = await deploy(folder);
      results.push({ folder: shown, deployed: r });
      if (!json()) process.stderr.write(`✓ ${shown}: ${deployedLine(r)} ${r.url}\n`);
    } catch (error) {
      results.push({ folder: shown, error: (error as Error).message });
      if (!json()) process.stderr.write(`✗ ${shown}: ${(error as Error).message}\n`);
    }
  }
  const failed = results.filter((r) => 'error' in r).length;
  if (failed > 0) process.exitCode = 1;
  print(
    results,
    () =>
      `deployed ${results.length - failed} of ${results.length} model folders from ${dir}${failed ? ` (${failed} failed)` : ''}`,
  );
}
