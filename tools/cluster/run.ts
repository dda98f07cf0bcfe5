/**
 * `npm run cluster`: a Hearth cluster on one machine — Redis (the local one under a fresh key
 * prefix, or a redis-server of its own), s3rver as the S3 endpoint, and N nodes of `npm start`'s
 * built node sharing them — until Ctrl-C, which stops everything it started.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { stop as stopEsbuild } from 'esbuild';

import { withoutCredentials } from '../../platform/redis/index.js';
import { buildNode } from '../build-node.js';
import type { Child } from './children.js';
import { portFree } from './children.js';
import { Lifetime } from './lifetime.js';
import type { ClusterNode } from './nodes.js';
import { describeExit, nodeEnv, nodeName, portsOf, startNodeProcess } from './nodes.js';
import type { Output } from './output.js';
import { banner, output } from './output.js';
import { clusterRedis } from './redis.js';
import { S3RVER_CREDENTIALS, startS3rver } from './s3.js';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));
const BUCKET = 'hearth-cluster';
/** How long a node may drain after SIGTERM before its process group is killed. */
const STOP_GRACE_MS = 15_000;

export interface ClusterOptions {
  nodes: number;
  /** Node 1's HTTP port (node i's ports are 10 apart), or 0 for free ports. */
  port: number;
  /** Where the S3 objects and the nodes' data folders go. */
  dataDir: string;
  /** A Redis URL (used when it answers) or `own`. */
  redis: string;
  /** API keys on: an admin key made and printed. */
  keys: boolean;
  /** Build the node first (tools/build-node.ts). */
  build: boolean;
}

/** Thrown where a start step finds Ctrl-C came meanwhile. */
class Stopped extends Error {}

/** Refuses ports already taken, naming the node and the option that moves them. */
async function checkPorts(base: number, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    for (const [what, port] of Object.entries(portsOf(base, i))) {
      if (!(await portFree(port)))
        throw new Error(
          `port ${port} (node-${i + 1}'s ${what}) is taken: stop what holds it, or pick others with --port (0: free ones)`,
        );
    }
  }
}

/** Reports a child that ends while the cluster runs; `fatal` ones end the cluster. */
function watch(child: Child, life: Lifetime, out: Output, onEnd: () => void): void {
  void child.exited.then((exit) => {
    if (life.closing) return;
    out.note(`${child.name} ended (${describeExit(exit)})`);
    onEnd();
  });
}

interface Run {
  out: Output;
  life: Lifetime;
  /** Every child process started, for a second Ctrl-C to kill. */
  children: Child[];
  /** Ends the cluster with exit code 1, saying why. */
  failed(why: string): void;
}

/** Starts the stores and the nodes, each deferred to `life`; prints the banner once all listen. */
async function start(o: ClusterOptions, { out, life, children, failed }: Run): Promise<void> {
  const checked = () => {
    if (life.closing) throw new Stopped();
  };
  if (o.port !== 0) await checkPorts(o.port, o.nodes);
  await Promise.all(['nodes', 's3'].map((d) => rm(join(o.dataDir, d), { recursive: true, force: true })));
  const redis = await clusterRedis(o.redis, out.lines('redis'));
  life.defer(() => redis.close());
  checked();
  if (o.redis !== 'own' && redis.own)
    out.note(`no Redis answers at ${withoutCredentials(o.redis)}: started its own at ${withoutCredentials(redis.url)}`);
  if (redis.own) {
    children.push(redis.own);
    watch(redis.own, life, out, () => failed('its redis-server ended'));
  }
  const s3 = await startS3rver(join(o.dataDir, 's3'), BUCKET);
  life.defer(() => s3.close());
  checked();
  if (o.build) {
    out.note('building the node (tools/build-node.ts → dist/node/main.mjs)');
    await buildNode();
    await stopEsbuild(); // its service process would idle beside the cluster until it ends
    checked();
  }
  const apiKey = o.keys ? `hk_${randomBytes(18).toString('base64url')}` : undefined;
  const shared = {
    redisUrl: redis.url,
    redisPrefix: redis.prefix,
    s3Endpoint: s3.endpoint,
    s3Bucket: BUCKET,
    s3Credentials: S3RVER_CREDENTIALS,
    secretsKey: randomBytes(32).toString('hex'),
    apiKey,
  };
  const main = join(REPO, 'dist', 'node', 'main.mjs');
  const started = Array.from({ length: o.nodes }, (_, i) => {
    const { name, dir } = nodeName(o.dataDir, i);
    return startNodeProcess(name, main, REPO, nodeEnv(shared, portsOf(o.port, i), dir), out.lines(name));
  });
  children.push(...started.map((s) => s.child));
  life.defer(() => Promise.all(started.map(({ child }) => stopNode(child, out))));
  const nodes: ClusterNode[] = await Promise.all(started.map((s) => s.up));
  checked();
  let left = nodes.length;
  for (const n of nodes) watch(n.child, life, out, () => --left === 0 && failed('no node is left'));
  out.print(
    banner({
      nodes,
      redis: { url: redis.url, prefix: redis.prefix, own: redis.own !== undefined },
      s3: { endpoint: s3.endpoint, bucket: BUCKET, folder: join(o.dataDir, 's3') },
      apiKey,
    }),
  );
}

async function stopNode(child: Child, out: Output): Promise<void> {
  const exit = await child.stop(STOP_GRACE_MS);
  out.note(`${child.name} stopped (${describeExit(exit)})`);
}

/** Runs the cluster until SIGINT or SIGTERM (or a failure); resolves with the exit code once everything it started has ended. */
export async function runCluster(o: ClusterOptions): Promise<number> {
  const names = Array.from({ length: o.nodes }, (_, i) => nodeName(o.dataDir, i).name);
  const out = output(process.stdout.isTTY === true, [...names, 'redis']);
  const life = new Lifetime((error) => out.note(`while stopping: ${(error as Error).message}`));
  let code = 0;
  const children: Child[] = [];
  const failed = (why: string) => {
    if (life.closing) return;
    code = 1;
    out.note(`${why}: stopping the cluster`);
    void life.close();
  };
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals += 1;
    if (signals === 1) out.note(`${signal}: stopping every node, s3rver and Redis (Ctrl-C again: kill them now)`);
    if (signals === 2) {
      out.note('killing what is left');
      for (const child of children) child.kill();
    }
    void life.close();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    await start(o, { out, life, children, failed });
  } catch (error) {
    if (!(error instanceof Stopped)) failed(`the cluster did not start: ${(error as Error).message}`);
  }
  await life.ended;
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
  out.note(code === 0 ? 'stopped: nothing it started is running' : 'stopped');
  return code;
}
