/** Hearth nodes for end-to-end tests: real HTTP on loopback, their own data dir and Redis prefix. */

import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';

import { Redis } from 'ioredis';

import { loadConfig } from '../../platform/config/index.js';
import type { HearthNode } from '../../platform/node/index.js';
import { startNode } from '../../platform/node/index.js';
import { bundleHook } from '../../runtime/hooks/index.js';
import { freePort } from '../../tools/cluster/children.js';
import type { FixtureModel } from './fixtures.js';
import { modelPath, REPO_ROOT } from './fixtures.js';

/**
 * The runners' memory budget tests leave out: they deploy many functions at the default
 * limits.runnerMemoryMb (8 GiB) on one machine, more than it has. test/platform/budgets.test.ts
 * sets a small one of its own.
 */
const UNBUDGETED = { HEARTH_NODE_MEMORY_MB: String(2 ** 24) };

export async function testNode(dataDir: string, env: Record<string, string> = {}): Promise<HearthNode> {
  return startNode(
    loadConfig({
      ...UNBUDGETED,
      HEARTH_HTTP_PORT: '0',
      HEARTH_GRPC_PORT: '0',
      HEARTH_METRICS_PORT: '0',
      HEARTH_DATA_DIR: dataDir,
      HEARTH_LOG_LEVEL: 'silent',
      ...env,
    }),
  );
}

export interface NodeProcess {
  child: ChildProcess;
  /** The node's id in the cluster (as its records and pool listings name it). */
  node: string;
  url: string;
  grpc: string;
  /** The exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

/** A node in its own process (`platform/entry/main.ts`, from its sources; `npm start` runs it built); resolves once it listens. */
/** `onLine` hears every log line the node prints after it listens (a benchmark shows its warnings). */
/** `entry` replaces `npm start`'s (the GPU kit's bundled main.mjs), run from its own folder. */
/** `user`: the node runs as that uid and gid (as the container image's USER runs it), not the test's. */
export async function spawnNode(
  dataDir: string,
  env: Record<string, string> = {},
  onLine?: (line: string) => void,
  entry?: string,
  user?: { uid: number; gid: number },
): Promise<NodeProcess> {
  // HEARTH_TEST_NODE_ARGS: node's own flags for it (a benchmark profiled with --cpu-prof).
  const flags = process.env.HEARTH_TEST_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const args = [...flags, ...(entry ? [entry] : ['--import', 'tsx', join(REPO_ROOT, 'platform', 'entry', 'main.ts')])];
  const child = spawn(process.execPath, args, {
    cwd: entry ? dirname(entry) : REPO_ROOT,
    env: {
      ...process.env,
      ...UNBUDGETED,
      HEARTH_HTTP_PORT: '0',
      HEARTH_GRPC_PORT: '0',
      HEARTH_METRICS_PORT: '0',
      HEARTH_DATA_DIR: dataDir,
      HEARTH_LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
    ...(user ?? {}),
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const lines = createInterface({ input: child.stdout! });
  const ports = await new Promise<{ http: number; grpc: number; node: string }>((resolve, reject) => {
    lines.on('line', (line) => {
      // A line that is not JSON (a huge one a pipe split, say) is heard as it is.
      let entry: { msg?: string; http?: number; grpc?: number; node?: string } = {};
      try {
        entry = JSON.parse(line) as typeof entry;
      } catch {}
      if (entry.msg === 'hearth listening') resolve({ http: entry.http!, grpc: entry.grpc!, node: entry.node! });
      else onLine?.(line);
    });
    void exited.then((code) => reject(new Error(`the node exited with ${code} before it listened`)));
  });
  return { child, node: ports.node, url: `http://127.0.0.1:${ports.http}`, grpc: `127.0.0.1:${ports.grpc}`, exited };
}

/**
 * A node started on an HTTP port picked before it starts, for a test that calls it before it says
 * where it listens: `start(port)` starts it, `watch(url, failed)` polls it for what the test wants
 * until `failed()` says the start failed. Another process on a busy machine can bind the port in
 * between (the node fails, EADDRINUSE): then it starts again on another, three tries, where
 * `again` allows it for the start's error.
 */
export async function onPickedPort<S, T>(
  start: (port: number) => Promise<S>,
  watch: (url: string, failed: () => boolean) => Promise<T>,
  again: (error: unknown) => boolean = () => true,
): Promise<{ url: string; started: Promise<S>; seen: T }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const started = start(port);
    let failure: { error: unknown } | undefined;
    started.catch((error: unknown) => {
      failure = { error };
    });
    const seen = await watch(url, () => failure !== undefined);
    if (failure === undefined) return { url, started, seen };
    if (attempt === 3 || !again(failure.error)) throw failure.error;
  }
}

export const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** Uploads bytes as an artifact (HEAD first, as the CLI does); returns the hash. */
export async function upload(url: string, bytes: Uint8Array, headers: Record<string, string> = {}): Promise<string> {
  const sha = sha256(bytes);
  const head = await fetch(`${url}/api/v1/artifacts/${sha}`, { method: 'HEAD', headers });
  if (head.status === 200) return sha;
  const put = await fetch(`${url}/api/v1/artifacts/${sha}`, { method: 'PUT', body: bytes, headers });
  if (put.status !== 201 && put.status !== 200) throw new Error(`upload failed: ${put.status} ${await put.text()}`);
  return sha;
}

const FIXTURE_HOOKS = join(REPO_ROOT, 'test', 'fixtures', 'hooks');
/** The fixture hooks' bundles, made once for every file this worker runs (they never change in a run). */
const fixtureBundles = new Map<string, Promise<Uint8Array>>();

export async function hookBundle(name: string, outDir: string, hooksDir = FIXTURE_HOOKS): Promise<Uint8Array> {
  const make = async () =>
    new Uint8Array(await readFile((await bundleHook(join(hooksDir, `${name}.ts`), outDir)).path));
  if (hooksDir !== FIXTURE_HOOKS) return make();
  let bundle = fixtureBundles.get(name);
  if (!bundle) {
    bundle = make();
    bundle.catch(() => fixtureBundles.delete(name));
    fixtureBundles.set(name, bundle);
  }
  return bundle;
}

export function uniquePrefix(): string {
  return `test:${randomUUID()}:`;
}

/** Deletes every Redis key under a test's prefix. */
export async function dropKeys(prefix: string, url = 'redis://127.0.0.1:6379'): Promise<void> {
  const redis = new Redis(url);
  try {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}

/** Deploys through the API: POST /api/v1/functions with `body` ({spec, artifacts, keepTraffic?}) as JSON. */
export function postFunction(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}/api/v1/functions`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/**
 * Deploys `spec` with a fixture model and, when `hook` is named, a hook bundled from `hooksDir`
 * (test/fixtures/hooks by default) into `bundles` (a folder of this process by default): upload,
 * upload, POST. The deploy's response.
 */
export async function deployFixture(
  url: string,
  spec: object,
  artifacts: { model: FixtureModel; hook?: string; bundles?: string; hooksDir?: string },
  headers: Record<string, string> = {},
  /** More of the deploy's body (a canary). */
  extra: Record<string, unknown> = {},
): Promise<Response> {
  const model = await upload(url, new Uint8Array(await readFile(modelPath(artifacts.model))), headers);
  const hook = artifacts.hook
    ? await upload(
        url,
        await hookBundle(
          artifacts.hook,
          artifacts.bundles ?? join(tmpdir(), `hearth-bundles-${process.pid}`),
          artifacts.hooksDir,
        ),
        headers,
      )
    : undefined;
  return postFunction(url, { spec, artifacts: { model, ...(hook ? { hook } : {}) }, ...extra }, headers);
}
