/**
 * The local cluster's Redis: the one at a URL when it answers (its keys under a prefix of this run's
 * own, dropped when the cluster stops), or a redis-server of its own on a free port, with no
 * persistence, in a temp folder.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Redis } from 'ioredis';

import type { Child } from './children.js';
import { freePort, spawnChild } from './children.js';

export interface ClusterRedis {
  url: string;
  /** The key prefix every node shares: fresh for each run. */
  prefix: string;
  /** The redis-server it started, when it started one. */
  own: Child | undefined;
  /** Drops the run's keys (a Redis it did not start) or stops its own server and removes its folder. */
  close(): Promise<void>;
}

/**
 * Whether a Redis answers PING at `url` within a second. connectTimeout bounds the TCP connect only:
 * a port that accepts and never answers (not a Redis) is bounded by commandTimeout, with no ready
 * check (its INFO would wait as long).
 */
export async function answering(url: string): Promise<boolean> {
  const probe = new Redis(url, {
    lazyConnect: true,
    retryStrategy: () => null,
    connectTimeout: 1000,
    commandTimeout: 1000,
    enableReadyCheck: false,
    maxRetriesPerRequest: 0,
  });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

/** Deletes every key under `prefix` (SCAN, not KEYS: a shared Redis is not held up). */
async function dropKeys(url: string, prefix: string): Promise<number> {
  const redis = new Redis(url, { lazyConnect: true, retryStrategy: () => null });
  redis.on('error', () => undefined);
  let dropped = 0;
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length) dropped += await redis.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return dropped;
}

/** A redis-server of its own: loopback, a free port, no RDB or AOF, in a temp folder it removes. */
async function ownRedis(onLine: (line: string) => void): Promise<{ url: string; child: Child; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'hearth-cluster-redis-'));
  const port = await freePort();
  // A password of this run's own: loopback is shared by every user of the machine. Given in a
  // config on stdin, not argv (which `ps` shows them).
  const password = randomBytes(18).toString('base64url');
  const child = spawnChild(
    'redis',
    'redis-server',
    ['-', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { cwd: dir },
    onLine,
    `requirepass ${password}\n`,
  );
  const url = `redis://:${password}@127.0.0.1:${port}`;
  let up = await answering(url);
  for (let i = 0; i < 400 && !up && child.exitCode() === undefined; i++) {
    await new Promise((r) => setTimeout(r, 25));
    up = await answering(url);
  }
  if (!up) {
    await child.stop();
    await rm(dir, { recursive: true, force: true });
    throw new Error(
      `redis-server on port ${port} did not answer (is redis-server installed? apt-get install redis-server)`,
    );
  }
  return { url, child, dir };
}

/**
 * `wanted`: a Redis URL (used when it answers, else one of its own) or `own` (always its own).
 * `onLine` hears its own server's output.
 */
export async function clusterRedis(wanted: string, onLine: (line: string) => void): Promise<ClusterRedis> {
  const prefix = `hearth-cluster:${randomBytes(4).toString('hex')}:`;
  if (wanted !== 'own' && (await answering(wanted))) {
    return { url: wanted, prefix, own: undefined, close: async () => void (await dropKeys(wanted, prefix)) };
  }
  const { url, child, dir } = await ownRedis(onLine);
  return {
    url,
    prefix,
    own: child,
    async close() {
      await child.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
