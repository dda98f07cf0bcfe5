/**
 * `hearth`: the CLI over the typed client (../client.ts). Tables for people, `--json` for programs
 * on every command that reads; exit codes 0 (ok), 1 (the call failed), 2 (usage).
 */
import { readFile } from 'node:fs/promises';

import Table from 'cli-table3';
import { Command, CommanderError, InvalidArgumentError } from 'commander';

import type { FunctionInfo, JobInfo, PoolInfo } from '../client.js';
import { Hearth } from '../client.js';
import { HearthError } from '../errors.js';
import { deployFolder } from './deploy.js';
import { initFunction } from './init.js';

const program = new Command('hearth')
  .description('Deploy and call PyTorch model functions on a Hearth node')
  .option('--url <url>', 'the node (default: HEARTH_URL or http://127.0.0.1:8000)')
  .option('--api-key <key>', 'an API key (default: HEARTH_API_KEY)')
  .option('--json', 'print JSON instead of tables')
  .showHelpAfterError()
  .exitOverride();

const client = (): Hearth => new Hearth({ url: program.opts().url, apiKey: program.opts().apiKey });
const json = (): boolean => Boolean(program.opts().json);
const print = (value: unknown, table: () => string): void =>
  console.log(json() ? JSON.stringify(value, null, 2) : table());

function table(head: string[], rows: (string | number)[][]): string {
  const t = new Table({ head, style: { head: [], border: [] } });
  t.push(...rows.map((r) => r.map(String)));
  return t.toString();
}

const integer =
  (what: string) =>
  (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${what} must be a whole number`);
    return n;
  };

/** The version traffic mostly goes to. */
function mainVersion(info: FunctionInfo): number | undefined {
  const [top] = Object.entries(info.traffic).sort((a, b) => b[1] - a[1]);
  return top ? Number(top[0]) : undefined;
}

program
  .command('init <dir>')
  .description('scaffold a function (hearth.yaml, hook.ts, export.py, README) that deploys as it is')
  .option('--name <name>', 'the function name (default: the folder name)')
  .action(async (dir: string, o: { name?: string }) => {
    const r = await initFunction(dir, o);
    print(r, () => [`created ${dir}: ${r.files.join(', ')}`, r.hint ?? `next: hearth deploy ${dir}`].join('\n'));
  });

program
  .command('deploy <dir>')
  .description(
    'validate, bundle the hook, upload what the node lacks, create a version, print its URL (a Triton model folder works too)',
  )
  .option('--keep-traffic', 'create the version without moving traffic to it')
  .option('--wait', 'wait until the version is warm on the node')
  .option(
    '--device <device>',
    'run on this device whatever the spec says: cpu (a GPU config on a CPU node), cuda, cuda:N, auto',
  )
  .option('--hook-timeout-ms <ms>', 'limit of one hook call (spec limits.hookTimeoutMs, default 10000)', Number)
  .option('--hook-memory-mb <mb>', 'memory of each hook (spec limits.hookMemoryMb, default 256)', Number)
  .option(
    '--runner-memory-mb <mb>',
    "resident memory of the function's runner process (spec limits.runnerMemoryMb, default 8192)",
    Number,
  )
  .option(
    '--forward-timeout-ms <ms>',
    'a forward past this is a hang: the runner restarts (spec limits.forwardTimeoutMs, default 60000)',
    Number,
  )
  .action(
    async (
      dir: string,
      o: {
        keepTraffic?: boolean;
        wait?: boolean;
        device?: string;
        hookTimeoutMs?: number;
        hookMemoryMb?: number;
        runnerMemoryMb?: number;
        forwardTimeoutMs?: number;
      },
    ) => {
      const hearth = client();
      const r = await deployFolder(hearth, dir, {
        keepTraffic: o.keepTraffic,
        device: o.device,
        limits: {
          hookTimeoutMs: o.hookTimeoutMs,
          hookMemoryMb: o.hookMemoryMb,
          runnerMemoryMb: o.runnerMemoryMb,
          forwardTimeoutMs: o.forwardTimeoutMs,
        },
        progress: !json() && process.stderr.isTTY,
      });
      if (!json()) for (const note of r.notes) process.stderr.write(`note: ${note}\n`);
      if (r.status === 'failed') throw new HearthError(`${r.name} v${r.version} failed to load: ${r.reason}`);
      if (o.wait) {
        for (let i = 0; i < 600; i++) {
          const pools = (await hearth.describe(r.name)).pools;
          if (pools.some((p) => p.version === r.version && p.state === 'warm')) break;
          await new Promise((res) => setTimeout(res, 200));
        }
      }
      print(
        { ...r, url: `${hearth.url}${r.url}` },
        () =>
          `${r.name} v${r.version} ${r.status}${r.status === 'pending' && r.reason ? `: ${r.reason}` : ''}${r.uploaded.model ? '' : ' (model unchanged, not uploaded)'}\n${hearth.url}${r.url}`,
      );
    },
  );

program
  .command('invoke <name>')
  .description('call a function (its hook takes the body)')
  .option('--data <json>', 'the request body, JSON')
  .option('--file <path>', 'the request body, from a file (bytes)')
  .option('--content-type <type>', "the body's content type")
  .option('--version <n>', 'a version instead of the traffic split', integer('--version'))
  .option('--timeout <ms>', 'a deadline, milliseconds', integer('--timeout'))
  .option('--idempotency-key <key>', 'a retry with the same key gets the first response')
  .option('--async', 'submit a job and print its id')
  .option('--wait', 'with --async: wait for the job and print it')
  .action(
    async (
      name: string,
      o: {
        data?: string;
        file?: string;
        contentType?: string;
        version?: number;
        timeout?: number;
        idempotencyKey?: string;
        async?: boolean;
        wait?: boolean;
      },
    ) => {
      if (o.data !== undefined && o.file !== undefined)
        throw new CommanderError(2, 'hearth.usage', 'give --data or --file, not both');
      const body = o.file !== undefined ? new Uint8Array(await readFile(o.file)) : (o.data ?? '{}');
      const options = {
        version: o.version,
        timeoutMs: o.timeout,
        idempotencyKey: o.idempotencyKey,
        contentType: o.contentType,
      };
      const hearth = client();
      if (o.async) {
        const job = await hearth.invokeAsync(name, body, options);
        if (!o.wait) return print(job, () => `job ${job.id} ${job.status}\nhearth jobs ${job.id}`);
        const done = await hearth.waitForJob(job.id);
        print(done, () => jobText(done));
        if (done.status === 'failed') process.exitCode = 1;
        return;
      }
      const r = await hearth.invoke(name, body, options);
      if (/json/.test(r.contentType)) print(r.json(), () => JSON.stringify(r.json(), null, 2));
      else if (json())
        console.log(
          JSON.stringify({
            contentType: r.contentType,
            version: r.version,
            base64: Buffer.from(r.body).toString('base64'),
          }),
        );
      else process.stdout.write(r.body);
    },
  );

program
  .command('ls')
  .description('list functions')
  .action(async () => {
    const fns = await client().list();
    print(fns, () =>
      fns.length === 0
        ? 'no functions yet: hearth init, then hearth deploy'
        : table(
            ['name', 'versions', 'latest', 'traffic', 'created'],
            fns.map((f) => [f.name, f.versions, f.latest ?? '', trafficText(f.traffic), f.createdAt]),
          ),
    );
  });

program
  .command('describe <name>')
  .description('a function: versions, traffic, pools')
  .action(async (name: string) => {
    const info = await client().describe(name);
    print(info, () =>
      [
        `${info.name} (created ${info.createdAt}), traffic ${trafficText(info.traffic)}`,
        versionsTable(info),
        info.pools.length ? poolsTable(info.pools) : 'no pool on this node (cold: the next call loads it)',
      ].join('\n'),
    );
  });

program
  .command('versions <name>')
  .description("a function's versions")
  .action(async (name: string) => {
    const info = await client().describe(name);
    print(
      info.versions.map((v) => ({
        version: v.version,
        status: v.status,
        traffic: info.traffic[v.version] ?? 0,
        createdAt: v.createdAt,
        reason: v.reason,
      })),
      () => versionsTable(info),
    );
  });

program
  .command('traffic <name> <weights...>')
  .description('set the traffic split, e.g. hearth traffic resnet 2=90 3=10')
  .action(async (name: string, weights: string[]) => {
    const traffic: Record<string, number> = {};
    for (const w of weights) {
      const m = /^(\d+)=(\d+(?:\.\d+)?)$/.exec(w);
      if (!m) throw new CommanderError(2, 'hearth.usage', `"${w}" is not VERSION=WEIGHT (e.g. 2=90)`);
      traffic[m[1]!] = Number(m[2]);
    }
    const r = await client().setTraffic(name, traffic);
    print(r, () => `${r.name}: ${trafficText(r.traffic)}`);
  });

program
  .command('rollback <name>')
  .description('send all traffic to the ready version before the one now serving')
  .action(async (name: string) => {
    const hearth = client();
    const info = await hearth.describe(name);
    const current = mainVersion(info);
    const previous = info.versions
      .filter((v) => v.status === 'ready' && current !== undefined && v.version < current)
      .at(-1);
    if (!previous) throw new HearthError(`${name} has no ready version before v${current ?? '?'} to roll back to`);
    const r = await hearth.setTraffic(name, { [previous.version]: 100 });
    print(
      { ...r, from: current, to: previous.version },
      () => `${name}: v${current} → v${previous.version} (${trafficText(r.traffic)})`,
    );
  });

program
  .command('scale <name>')
  .description('change the scaling of the serving version (a new version, same artifacts, traffic moves to it)')
  .option('--min <n>', 'minInstances (0 scales to zero when idle)', integer('--min'))
  .option('--max <n>', 'maxInstances', integer('--max'))
  .option('--target <n>', 'targetQueueDepth: queued plus running requests per instance', integer('--target'))
  .action(async (name: string, o: { min?: number; max?: number; target?: number }) => {
    if (o.min === undefined && o.max === undefined && o.target === undefined)
      throw new CommanderError(2, 'hearth.usage', 'give --min, --max or --target');
    const hearth = client();
    const info = await hearth.describe(name);
    const serving = info.versions.find((v) => v.version === mainVersion(info));
    if (!serving) throw new HearthError(`${name} has no version serving traffic`);
    const scaling = {
      ...(serving.spec.scaling as Record<string, number>),
      ...(o.min === undefined ? {} : { minInstances: o.min }),
      ...(o.max === undefined ? {} : { maxInstances: o.max }),
      ...(o.target === undefined ? {} : { targetQueueDepth: o.target }),
    };
    const r = await hearth.deploy({ ...serving.spec, scaling }, serving.artifacts);
    if (r.status === 'failed') throw new HearthError(`${name} v${r.version} failed to load: ${r.reason}`);
    print(
      { ...r, scaling },
      () => `${name} v${r.version} (from v${serving.version}): scaling ${JSON.stringify(scaling)}`,
    );
  });

program
  .command('delete <name>')
  .description('delete a function, its versions and pools')
  .action(async (name: string) => {
    await client().delete(name);
    print({ deleted: name }, () => `deleted ${name}`);
  });

program
  .command('jobs <id>')
  .description('an async invocation: status, result or error')
  .option('--wait', 'wait until it finishes')
  .action(async (id: string, o: { wait?: boolean }) => {
    const job = o.wait ? await client().waitForJob(id) : await client().job(id);
    print(job, () => jobText(job));
  });

program
  .command('top')
  .description(
    'pools live: instances by state, queue, requests/s, mean and p99 latency (p99 of the latest 1024 requests)',
  )
  .option('--interval <ms>', 'refresh interval', integer('--interval'), 1000)
  .option('--once', 'print one sample and exit')
  .action(async (o: { interval: number; once?: boolean }) => {
    const hearth = client();
    let last = new Map<string, PoolInfo>();
    for (;;) {
      const pools = await hearth.pools();
      const rows = pools.map((p) => {
        const key = `${p.node ?? ''}/${p.function}@${p.version}`;
        const before = last.get(key);
        const done = before ? p.success + p.failure - before.success - before.failure : 0;
        const us = (p.durations?.request?.totalUs ?? 0) - (before?.durations?.request?.totalUs ?? 0);
        const count = (p.durations?.request?.count ?? 0) - (before?.durations?.request?.count ?? 0);
        return {
          node: p.node,
          function: p.function,
          version: p.version,
          state: p.state,
          instances: p.instances,
          queueDepth: p.queueDepth,
          pending: p.pending,
          reqPerS: before ? Math.round((done / o.interval) * 1000) : null,
          meanMs: count > 0 ? Math.round(us / count / 100) / 10 : null,
          p99Ms: p.latency?.p99Ms ?? null,
        };
      });
      last = new Map(pools.map((p) => [`${p.node ?? ''}/${p.function}@${p.version}`, p]));
      if (json()) console.log(JSON.stringify(rows));
      else {
        if (!o.once && process.stdout.isTTY) process.stdout.write('\x1b[2J\x1b[H');
        console.log(
          rows.length === 0
            ? 'no pools'
            : table(
                [
                  'function',
                  'v',
                  'node',
                  'state',
                  'inst busy/idle/loading',
                  'queue',
                  'in pool',
                  'req/s',
                  'mean ms',
                  'p99 ms',
                ],
                rows.map((r) => [
                  r.function,
                  r.version,
                  r.node ?? '',
                  r.state,
                  `${r.instances.total} ${r.instances.busy}/${r.instances.idle}/${r.instances.loading}`,
                  r.queueDepth,
                  r.pending,
                  r.reqPerS ?? '…',
                  r.meanMs ?? '',
                  r.p99Ms ?? '',
                ]),
              ),
        );
      }
      if (o.once) return;
      await new Promise((res) => setTimeout(res, o.interval));
    }
  });

function trafficText(traffic: Record<string, number>): string {
  return (
    Object.entries(traffic)
      .map(([v, w]) => `v${v}=${w}`)
      .join(' ') || 'none'
  );
}

function versionsTable(info: FunctionInfo): string {
  return table(
    ['version', 'status', 'traffic', 'created', 'reason'],
    info.versions.map((v) => [v.version, v.status, info.traffic[v.version] ?? 0, v.createdAt, v.reason ?? '']),
  );
}

function poolsTable(pools: PoolInfo[]): string {
  return table(
    ['version', 'node', 'state', 'instances', 'queue', 'in pool', 'ok', 'failed'],
    pools.map((p) => [
      p.version,
      p.node ?? '',
      p.state,
      p.instances.total,
      p.queueDepth,
      p.pending,
      p.success,
      p.failure,
    ]),
  );
}

function jobText(job: JobInfo): string {
  const lines = [
    `job ${job.id}: ${job.status} (${job.function}${job.version ? ` v${job.version}` : ''}, attempts ${job.attempts})`,
  ];
  if (job.result)
    lines.push(
      job.result.json !== undefined
        ? JSON.stringify(job.result.json, null, 2)
        : `${job.result.contentType}, ${job.result.base64?.length ?? 0} base64 characters`,
    );
  if (job.error) lines.push(`error: ${job.error.error} (${job.error.code})`);
  return lines.join('\n');
}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // --help and --version exit 0; anything else commander refused is a usage error (commander has
    // printed its own message; ours are printed here).
    if (error.exitCode === 0) process.exit(0);
    if (error.code === 'hearth.usage') console.error(`error: ${error.message}`);
    process.exit(2);
  }
  if (error instanceof HearthError) {
    console.error(`error: ${error.message} (${error.code})`);
    process.exit(1);
  }
  console.error(`error: ${(error as Error).message}`);
  process.exit(1);
}
