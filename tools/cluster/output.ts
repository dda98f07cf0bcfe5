/**
 * What the local cluster prints: every child's lines behind its name (`node-1 | …`), pino-pretty's
 * readable form of a node's JSON lines on a terminal (the JSON itself otherwise, for a pipe or a
 * file), its own notes as `cluster | …`, and the banner once every node is up.
 */
import { styleText } from 'node:util';

import { prettyFactory } from 'pino-pretty';

import { withoutCredentials } from '../../platform/redis/index.js';
import type { ClusterNode } from './nodes.js';

const COLORS = ['cyan', 'magenta', 'yellow', 'green', 'blue', 'red'] as const;

export interface Output {
  /** A writer of `name`'s lines. */
  lines(name: string): (line: string) => void;
  /** One line of the cluster command's own. */
  note(text: string): void;
  /** Lines as they are (the banner). */
  print(text: string): void;
}

export function output(tty: boolean, names: string[]): Output {
  const width = Math.max(7, ...names.map((n) => n.length));
  const pretty = tty
    ? prettyFactory({
        colorize: true,
        singleLine: true,
        translateTime: 'SYS:HH:MM:ss.l',
        ignore: 'pid,hostname,service',
      })
    : undefined;
  const label = (name: string): string => {
    const padded = name.padEnd(width);
    const index = names.indexOf(name);
    return tty && index >= 0 ? styleText(COLORS[index % COLORS.length]!, padded) : padded;
  };
  // Each line of a pretty one (an error's stack) behind the name too.
  const write = (name: string, text: string) =>
    process.stdout.write(
      `${text
        .split('\n')
        .map((line) => `${label(name)} | ${line}`)
        .join('\n')}\n`,
    );
  return {
    lines: (name) => (line) => write(name, pretty && line.startsWith('{') ? pretty(line).trimEnd() : line),
    note: (text) => write('cluster', text),
    print: (text) => process.stdout.write(`${text}\n`),
  };
}

export interface BannerFacts {
  nodes: ClusterNode[];
  redis: { url: string; prefix: string; own: boolean };
  s3: { endpoint: string; bucket: string; folder: string };
  apiKey: string | undefined;
}

/** The banner: each node's addresses, the console, the key, and what to run next. */
export function banner(f: BannerFacts): string {
  const [first, second = first] = f.nodes as [ClusterNode, ...ClusterNode[]];
  const key = f.apiKey ? ` --api-key ${f.apiKey}` : '';
  const auth = f.apiKey ? ` -H 'authorization: Bearer ${f.apiKey}'` : '';
  const url = withoutCredentials(f.redis.url);
  const redis = f.redis.own ? `its own redis-server at ${url} (a password of this run's own)` : url;
  return [
    '',
    `Hearth cluster of ${f.nodes.length} node${f.nodes.length > 1 ? 's' : ''} is up.`,
    ...f.nodes.map(
      (n) =>
        `  ${n.name}  ${n.url}  gRPC 127.0.0.1:${n.ports.grpc}  metrics 127.0.0.1:${n.ports.metrics}  (pid ${n.child.pid}, id ${n.id})`,
    ),
    `  Redis   ${redis}, keys under ${f.redis.prefix}`,
    `  S3      ${f.s3.endpoint}, bucket ${f.s3.bucket} (s3rver, objects in ${f.s3.folder})`,
    `Console: ${first.url}/console/ (any node's shows every node's pools)`,
    ...(f.apiKey ? [`API key (admin): ${f.apiKey}   export HEARTH_API_KEY=${f.apiKey}`] : []),
    '',
    'Next, in another terminal:',
    '  (cd functions/text-sentiment && /usr/bin/python3 export.py)   # its model.pt (a Python with PyTorch)',
    `  npx hearth deploy functions/text-sentiment --wait --url ${first.url}${key}   # through ${first.name}`,
    `  npx hearth invoke text-sentiment --data '{"text": "a wonderful film"}' --url ${second.url}${key}   # through ${second.name}`,
    `  curl -s ${second.url}/api/v1/pools${auth}   # every node's pools, each with its node`,
    '',
    `Ctrl-C (or kill ${process.pid}) stops every node, s3rver and ${f.redis.own ? 'its redis-server' : "this run's Redis keys"}.`,
    '',
  ].join('\n');
}
