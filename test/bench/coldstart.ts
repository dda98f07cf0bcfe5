/**
 * bench:coldstart — ResNet-50 (about 100 MB) from zero instances, against its raw cost measured in
 * the same run:
 *   raw_s3:    S3 GET of the artifact (s3rver on loopback) streamed to a file + engine load + one
 *              warm-up forward, timed directly;
 *   raw_cache: engine load from the local file + one warm-up forward;
 *   hearth_s3: a new node (empty cache; registry in Redis, artifacts in the same S3), once its spare
 *              runner is up, gets a KServe binary infer request for the function, at zero
 *              instances: time to its response;
 *   hearth_cache: the same node after `unload` (zero instances, artifact in its cache).
 * Hearth's runners are jailed (HEARTH_SANDBOX=auto: namespaces, uid, Landlock, seccomp, cgroup); each
 * round also measures the same two cold starts on a node with HEARTH_SANDBOX=off, so the jail's
 * cost (target ≤ 20 ms) is a difference of medians from one run.
 * Rounds alternate raw and Hearth; the medians are reported. Writes
 * test/bench/results/coldstart.json {raw_s3_ms, raw_cache_ms, hearth_s3_ms, hearth_cache_ms,
 * ratio_s3, ratio_cache, unjailed_s3_ms, unjailed_cache_ms, jail_cost_s3_ms, jail_cost_cache_ms}
 * plus the per-phase cold starts Hearth recorded, and ./coldstart-cases.ts's: a runner's start
 * (forked from the template vs exec'd), a node restarted with one request as soon as its port
 * answers, and a burst of four cold functions, each against python3-torch's load+forward.
 */
import { createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';

import { GetObjectCommand } from '@aws-sdk/client-s3';

import { loadConfig } from '../../platform/config/index.js';
import type { HearthNode } from '../../platform/node/index.js';
import { startNode } from '../../platform/node/index.js';
import { loadModel } from '../../runtime/index.js';
import { ensureModels, modelPath, REPO_ROOT } from '../helpers/fixtures.js';
import { dropKeys, postFunction, uniquePrefix, upload } from '../helpers/node.js';
import { startS3 } from '../helpers/s3.js';
import { deployCases, issue44Cases } from './coldstart-cases.js';
import { infer as inferOnce } from './coldstart-restart.js';
import { randomRows } from './engine-reference.js';

const { values: flags } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    // off: the in-process cases alone (an A/B against an older checkout's bench:coldstart).
    cases: { type: 'string', default: 'on' },
    out: { type: 'string', default: join(REPO_ROOT, 'test', 'bench', 'results', 'coldstart.json') },
  },
});
const rounds = Number(flags.rounds);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const round = (v: number, d = 1): number => Math.round(v * 10 ** d) / 10 ** d;

const SPEC = {
  name: 'resnet50',
  model: 'model.pt',
  maxBatchSize: 8,
  instances: { device: 'cpu' },
  inputs: [{ name: 'x', dtype: 'FP32', dims: [3, 224, 224] }],
  outputs: [{ name: 'y', dtype: 'FP32', dims: [1000] }],
};
const image = randomRows(3 * 224 * 224, 3);
const warm = [{ dtype: 'FP32' as const, shape: [1, 3, 224, 224], data: image }];

async function main(): Promise<void> {
  ensureModels();
  const dir = await mkdtemp(join(tmpdir(), 'hearth-bench-coldstart-'));
  const s3 = await startS3();
  const prefix = uniquePrefix();
  const env = (name: string, sandbox = 'auto') => ({
    HEARTH_SANDBOX: sandbox,
    HEARTH_HTTP_PORT: '0',
    HEARTH_GRPC_PORT: '0',
    HEARTH_METRICS_PORT: '0',
    HEARTH_LOG_LEVEL: 'warn',
    HEARTH_DATA_DIR: join(dir, name),
    REDIS_URL: 'redis://127.0.0.1:6379',
    HEARTH_REDIS_PREFIX: prefix,
    HEARTH_S3_BUCKET: s3.bucket,
    HEARTH_S3_ENDPOINT: s3.endpoint,
    HEARTH_S3_PREFIX: 'hearth/',
  });
  const nodes: HearthNode[] = [];
  const results = {
    raw_s3: [] as number[],
    raw_cache: [] as number[],
    hearth_s3: [] as number[],
    hearth_cache: [] as number[],
    unjailed_s3: [] as number[],
    unjailed_cache: [] as number[],
  };
  const phases: object[] = [];
  const cases: Record<string, unknown> = {};
  try {
    // Deploy once through a first node; the artifact lands in S3 under its hash.
    const first = await startNode(loadConfig(env('deployer')));
    nodes.push(first);
    const sha = await upload(first.httpUrl, new Uint8Array(await readFile(modelPath('resnet50'))));
    const deployed = await postFunction(first.httpUrl, { spec: SPEC, artifacts: { model: sha } });
    if (deployed.status !== 201) throw new Error(`deploy failed: ${await deployed.text()}`);
    await deployCases(first.httpUrl);
    await first.close();
    const key = `hearth/artifacts/sha256/${sha}`;
    console.log(
      `bench:coldstart — ResNet-50 ${(image.byteLength / 1e6).toFixed(1)} MB input, ${rounds} rounds; artifact s3://${s3.bucket}/${key}`,
    );

    const resnet = { name: 'resnet50', file: modelPath('resnet50'), shape: [3, 224, 224] };
    const infer = (node: HearthNode): Promise<number> => inferOnce(node.httpUrl, resnet);

    for (let i = 0; i < rounds; i++) {
      // Raw: GET to a file, load, one warm-up forward.
      const file = join(dir, `raw-${i}.pt`);
      let t0 = performance.now();
      const object = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
      await pipeline(object.Body as Readable, createWriteStream(file));
      const model = await loadModel(file, { warmup: { inputs: warm, runs: 1 } });
      results.raw_s3.push(performance.now() - t0);
      model.dispose();
      t0 = performance.now();
      const cached = await loadModel(file, { warmup: { inputs: warm, runs: 1 } });
      results.raw_cache.push(performance.now() - t0);
      cached.dispose();

      // Hearth: a new node at zero instances with an empty cache, then the same node after unload;
      // jailed runners, then (in turn, alternating which goes first) runners without the jail.
      const sandboxes = i % 2 === 0 ? (['auto', 'off'] as const) : (['off', 'auto'] as const);
      for (const sandbox of sandboxes) {
        const node = await startNode(loadConfig(env(`node-${i}-${sandbox}`, sandbox)));
        nodes.push(node);
        // A node already running (its spare up): a new node's start is the restart case's.
        await node.spareUp;
        const [s3, cache] =
          sandbox === 'auto' ? (['hearth_s3', 'hearth_cache'] as const) : (['unjailed_s3', 'unjailed_cache'] as const);
        results[s3].push(await infer(node));
        if (sandbox === 'auto') phases.push({ from: 's3', ...node.service.pools()[0]!.coldStart });
        const unload = await fetch(`${node.httpUrl}/v2/repository/models/resnet50/unload`, { method: 'POST' });
        if (unload.status !== 200) throw new Error(`unload answered ${unload.status}`);
        results[cache].push(await infer(node));
        if (sandbox === 'auto') phases.push({ from: 'cache', ...node.service.pools()[0]!.coldStart });
        await node.close();
      }
      console.log(
        `  round ${i + 1}: raw s3 ${round(results.raw_s3[i]!)} ms, raw cache ${round(results.raw_cache[i]!)} ms, hearth s3 ${round(results.hearth_s3[i]!)} ms, hearth cache ${round(results.hearth_cache[i]!)} ms; without the jail ${round(results.unjailed_s3[i]!)} / ${round(results.unjailed_cache[i]!)} ms`,
      );
    }
    if (flags.cases !== 'off') Object.assign(cases, await issue44Cases(rounds, (name) => env(name)));
  } finally {
    for (const n of nodes) await n.close().catch(() => undefined);
    await s3.close();
    await dropKeys(prefix);
    await rm(dir, { recursive: true, force: true });
  }
  const out = {
    raw_s3_ms: round(median(results.raw_s3)),
    raw_cache_ms: round(median(results.raw_cache)),
    hearth_s3_ms: round(median(results.hearth_s3)),
    hearth_cache_ms: round(median(results.hearth_cache)),
    ratio_s3: 0,
    ratio_cache: 0,
    unjailed_s3_ms: round(median(results.unjailed_s3)),
    unjailed_cache_ms: round(median(results.unjailed_cache)),
    jail_cost_s3_ms: 0,
    jail_cost_cache_ms: 0,
    rounds: results,
    phases,
    ...cases,
  };
  out.ratio_s3 = round(out.hearth_s3_ms / out.raw_s3_ms, 3);
  out.ratio_cache = round(out.hearth_cache_ms / out.raw_cache_ms, 3);
  out.jail_cost_s3_ms = round(out.hearth_s3_ms - out.unjailed_s3_ms);
  out.jail_cost_cache_ms = round(out.hearth_cache_ms - out.unjailed_cache_ms);
  console.log(
    `\nmedians: raw s3 ${out.raw_s3_ms} ms, hearth s3 ${out.hearth_s3_ms} ms → ratio_s3 ${out.ratio_s3} (target ≤ 1.2)`,
  );
  console.log(
    `         raw cache ${out.raw_cache_ms} ms, hearth cache ${out.hearth_cache_ms} ms → ratio_cache ${out.ratio_cache} (target ≤ 1.1)`,
  );
  console.log(
    `         the jail: s3 ${out.hearth_s3_ms} vs ${out.unjailed_s3_ms} ms without (${out.jail_cost_s3_ms} ms), cache ${out.hearth_cache_ms} vs ${out.unjailed_cache_ms} ms (${out.jail_cost_cache_ms} ms) (target ≤ 20 ms)`,
  );
  mkdirSync(join(flags.out, '..'), { recursive: true });
  writeFileSync(flags.out, `${JSON.stringify(out, null, 2)}\n`);
  console.log(`wrote ${flags.out}`);
}

await main();
