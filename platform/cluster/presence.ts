/**
 * Presence: every node publishes itself and a summary of its pools every heartbeat (a key with a
 * TTL of three beats, and its id in a sorted set by time); a node missing three beats is gone.
 */
import type { Redis } from 'ioredis';

import type { PoolSummary } from '../../runtime/index.js';
import type { ClusterNode, PoolBrief, RoutedBrief } from './types.js';

export class Presence {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #nodeId: string;
  readonly #heartbeatMs: number;
  readonly #startedAt = Date.now();
  #nodes: ClusterNode[] = [];

  constructor(redis: Redis, prefix: string, nodeId: string, heartbeatMs: number) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#nodeId = nodeId;
    this.#heartbeatMs = heartbeatMs;
  }

  /** The nodes seen alive at the last beat (this one included). */
  get nodes(): readonly ClusterNode[] {
    return this.#nodes;
  }

  /** Whether another live node holds this version warm. */
  warmElsewhere(name: string, version: number): boolean {
    return this.#nodes.some(
      (n) =>
        n.id !== this.#nodeId &&
        n.pools.some((p) => p.function === name && p.version === version && p.state === 'warm'),
    );
  }

  /** Every live node's pools, this node's included. */
  pools(): PoolBrief[] {
    return this.#nodes.flatMap((n) => n.pools);
  }

  /** Every live node's routed calls by version, this node's included. */
  routed(): RoutedBrief[] {
    return this.#nodes.flatMap((n) => n.routed ?? []);
  }

  /** Publishes this node (reachable at `httpUrl`) with its pools and routed calls, and reads every live node. */
  async beat(pools: PoolSummary[], httpUrl: string, routed: RoutedBrief[] = []): Promise<void> {
    const now = Date.now();
    const briefs: PoolBrief[] = pools.map((p) => ({
      node: this.#nodeId,
      function: p.function,
      version: p.version,
      state: p.state,
      device: p.device,
      instances: p.instances,
      queueDepth: p.queueDepth,
      pending: p.pending,
      success: p.success,
      failure: p.failure,
    }));
    const self: ClusterNode = {
      id: this.#nodeId,
      http: httpUrl,
      startedAt: this.#startedAt,
      seenAt: now,
      pools: briefs,
      routed,
    };
    const ttl = this.#heartbeatMs * 3;
    const nodesKey = `${this.#prefix}nodes`;
    await this.#redis
      .multi()
      .set(`${this.#prefix}node:${this.#nodeId}`, JSON.stringify(self), 'PX', ttl)
      .zadd(nodesKey, now, this.#nodeId)
      .zremrangebyscore(nodesKey, 0, now - ttl)
      .exec();
    const ids = await this.#redis.zrangebyscore(nodesKey, now - ttl, '+inf');
    const raw = ids.length ? await this.#redis.mget(...ids.map((id) => `${this.#prefix}node:${id}`)) : [];
    this.#nodes = raw.filter((r): r is string => r !== null).map((r) => JSON.parse(r) as ClusterNode);
  }

  /** Leaves the cluster's view at once (a clean shutdown). */
  async leave(): Promise<void> {
    await this.#redis.zrem(`${this.#prefix}nodes`, this.#nodeId).catch(() => undefined);
  }
}
