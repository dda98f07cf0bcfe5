/**
 * The local cluster's Hearth nodes: each `npm start`'s built node (dist/node/main.mjs) in a process
 * of its own, with the environment that makes it a node of the cluster (the shared Redis and its
 * prefix, the S3 endpoint and bucket, the shared secrets key and API keys) and ports and a data
 * folder of its own. A node is up when it prints its `hearth listening` line.
 */
import { join } from 'node:path';

import type { Child, Exit } from './children.js';
import { spawnChild } from './children.js';

/** What every node of the cluster shares. */
export interface SharedEnv {
  redisUrl: string;
  redisPrefix: string;
  s3Endpoint: string;
  s3Bucket: string;
  s3Credentials: { accessKeyId: string; secretAccessKey: string };
  /** HEARTH_SECRETS_KEY: secrets sealed by one node open on another. */
  secretsKey: string;
  /** An admin API key, when keys are on. */
  apiKey: string | undefined;
}

export interface NodePorts {
  http: number;
  grpc: number;
  metrics: number;
}

export interface ClusterNode {
  name: string;
  child: Child;
  /** Its id in the cluster (its records and pool listings name it). */
  id: string;
  ports: NodePorts;
  url: string;
}

/** Node `index` (0-based)'s ports: 10 apart from `base` (HTTP, gRPC, metrics), or all 0 (free ones). */
export function portsOf(base: number, index: number): NodePorts {
  if (base === 0) return { http: 0, grpc: 0, metrics: 0 };
  const http = base + 10 * index;
  return { http, grpc: http + 1, metrics: http + 2 };
}

/** The node's environment: the caller's, less AWS settings s3rver would refuse, and the cluster's. */
export function nodeEnv(shared: SharedEnv, ports: NodePorts, dataDir: string): NodeJS.ProcessEnv {
  const { AWS_PROFILE: _profile, AWS_SESSION_TOKEN: _token, ...env } = process.env;
  return {
    ...env,
    HEARTH_HTTP_PORT: String(ports.http),
    HEARTH_GRPC_PORT: String(ports.grpc),
    HEARTH_METRICS_PORT: String(ports.metrics),
    HEARTH_DATA_DIR: dataDir,
    REDIS_URL: shared.redisUrl,
    HEARTH_REDIS_PREFIX: shared.redisPrefix,
    HEARTH_S3_ENDPOINT: shared.s3Endpoint,
    HEARTH_S3_BUCKET: shared.s3Bucket,
    HEARTH_S3_PREFIX: '',
    AWS_ACCESS_KEY_ID: shared.s3Credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: shared.s3Credentials.secretAccessKey,
    HEARTH_SECRETS_KEY: shared.secretsKey,
    ...(shared.apiKey ? { HEARTH_API_KEYS: `${shared.apiKey}:admin` } : {}),
  };
}

/** The `hearth listening` line's fields, when `line` is it. */
function listeningLine(line: string): { node: string; http: number; grpc: number; metrics: number } | undefined {
  if (!line.includes('"hearth listening"')) return undefined;
  try {
    const entry = JSON.parse(line) as { msg?: string; node: string; http: number; grpc: number; metrics: number };
    return entry.msg === 'hearth listening' ? entry : undefined;
  } catch {
    return undefined;
  }
}

const describeExit = (exit: Exit): string => (exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`);

/**
 * Starts the built node `main` as `name`, every line it prints to `onLine`; resolves once it
 * listens, and rejects (naming its exit) if it ends before.
 */
export function startNodeProcess(
  name: string,
  main: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
  onLine: (line: string) => void,
): { child: Child; up: Promise<ClusterNode> } {
  let heard: (line: string) => void = () => undefined;
  const child = spawnChild(name, process.execPath, [main], { cwd, env }, (line) => {
    onLine(line);
    heard(line);
  });
  const up = new Promise<ClusterNode>((resolve, reject) => {
    heard = (line) => {
      const entry = listeningLine(line);
      if (!entry) return;
      const ports = { http: entry.http, grpc: entry.grpc, metrics: entry.metrics };
      resolve({ name, child, id: entry.node, ports, url: `http://127.0.0.1:${ports.http}` });
    };
    void child.exited.then((exit) =>
      reject(new Error(`${name} ended (${describeExit(exit)}) before it listened: its lines above say why`)),
    );
  });
  return { child, up };
}

export { describeExit };

/** Node `i`'s name and data folder under the cluster's `dataDir`. */
export function nodeName(dataDir: string, index: number): { name: string; dir: string } {
  const name = `node-${index + 1}`;
  return { name, dir: join(dataDir, 'nodes', name) };
}
