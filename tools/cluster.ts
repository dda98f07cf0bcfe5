/**
 * `npm run cluster`: a local Hearth cluster in one command — Redis, an S3 endpoint (s3rver) and N
 * nodes of `npm start`'s built node sharing them, each node's lines behind its name — until Ctrl-C,
 * which stops everything it started (docs/cluster.md, "A cluster on one machine").
 *
 *   npm run cluster                              two nodes: HTTP 8000 and 8010 (gRPC +1, metrics +2)
 *   npm run cluster -- --nodes 3 --port 9000     three nodes: 9000, 9010, 9020
 *   npm run cluster -- --port 0 --redis own      free ports, a redis-server of its own
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Command, InvalidArgumentError } from 'commander';

import { REPO, runCluster } from './cluster/run.js';

/** An integer option in [min, max], named in its error. */
const integer = (min: number, max: number) => (value: string) => {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max)
    throw new InvalidArgumentError(`a whole number from ${min} to ${max}`);
  return n;
};

export function clusterCommand(): Command {
  return new Command('npm run cluster --')
    .description('A Hearth cluster on this machine: Redis, an S3 endpoint (s3rver) and N nodes; Ctrl-C stops it all')
    .option('--nodes <n>', 'how many nodes', integer(1, 16), 2)
    .option(
      '--port <port>',
      "node 1's HTTP port; node i's are 10 apart (HTTP, gRPC +1, metrics +2); 0 picks free ports",
      integer(0, 65_000),
      8000,
    )
    .option('--data <dir>', 'the folder for S3 objects and node data, emptied at start', resolve(REPO, '.cluster'))
    .option(
      '--redis <url|own>',
      'the Redis to share, used under a fresh key prefix when it answers (else a redis-server of its own); own: always its own',
      'redis://127.0.0.1:6379',
    )
    .option('--keys', 'turn API keys on: an admin key is made and printed')
    .option('--no-build', 'run dist/node/main.mjs as built (skip tools/build-node.ts)');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const o = clusterCommand().parse().opts<{
    nodes: number;
    port: number;
    data: string;
    redis: string;
    keys?: boolean;
    build: boolean;
  }>();
  if (o.redis !== 'own' && !/^rediss?:\/\//.test(o.redis)) {
    console.error('--redis must be a redis:// URL or own');
    process.exit(2);
  }
  // The AWS SDK's notice about Node 20 (in s3rver's client and every node): noise on a local cluster.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  process.exitCode = await runCluster({
    nodes: o.nodes,
    port: o.port,
    dataDir: resolve(o.data),
    redis: o.redis,
    keys: o.keys === true,
    build: o.build,
  });
}
