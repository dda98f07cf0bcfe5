/**
 * Cluster mode (REDIS_URL and S3 on every node): nodes find each other, see each other's pools,
 * and send a synchronous call to a node that holds the function warm instead of cold-starting it
 * everywhere.
 *
 * - Presence: every node publishes itself and a summary of its pools every `heartbeatMs`; a node
 *   missing three beats is gone. `GET /api/v1/pools` on any node shows every node's pools.
 * - Routing (FunctionService asks): a node with the version warm or loading serves locally. Else,
 *   if another node holds it warm, the call goes through the version's BullMQ queue
 *   (`warm.{fn}.{v}`), which only nodes holding it consume, and the answer comes back on the
 *   caller's reply channel (Redis pub/sub). Else one node wins the version's cold-start lease (a
 *   Redis key with a TTL) and loads it; the others send their calls through the queue, where they
 *   wait for the winner's pool instead of each loading their own.
 */
import { randomUUID } from 'node:crypto';

import type { Job } from 'bullmq';
import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';

import type { PoolSummary } from '../../runtime/index.js';
import type { HearthError } from '../../sdk/errors.js';
import {
  CancelledError,
  DeadlineExceededError,
  errorFromBody,
  HearthError as HearthErrorClass,
  UnavailableError,
} from '../../sdk/errors.js';
import { functionOfKey, versionKey } from '../../sdk/spec/index.js';
import { errorBody } from '../jobs/index.js';
import { blockingConnection, bullConnection, closeBounded, commandConnection, redisUp } from '../redis/index.js';
import { ColdStartLease, unavailable } from './lease.js';
import { Presence } from './presence.js';
import type { ClusterNode, Forwarded, ForwardedReply, LocalHandler, PoolBrief, RoutedBrief } from './types.js';
import type { CallData, Reply } from './wire.js';
import { decode, encode } from './wire.js';

interface Waiting {
  resolve(r: ForwardedReply): void;
  reject(e: HearthError): void;
  timer: NodeJS.Timeout;
  name: string;
  version: number;
  since: number;
  /** Runs the call here instead, if no live node holds the version any more. */
  fallback?: () => Promise<ForwardedReply>;
}

/** How long a canary's watcher may go without renewing its lease before another node takes over. */
const CANARY_LEASE_MS = 15_000;

export interface ClusterOptions {
  redisUrl: string;
  prefix: string;
  nodeId: string;
  heartbeatMs?: number;
  /** How long a cold-start lease holds if its node dies before it is warm. */
  leaseMs?: number;
  /** How long a forwarded call without a deadline waits for its answer. */
  forwardTimeoutMs?: number;
  /** Forwarded calls of one version a node runs at once (they batch in its pool). */
  concurrency?: number;
}

export class Cluster {
  readonly nodeId: string;
  readonly #o: Required<ClusterOptions>;
  #httpUrl = '';
  readonly #redis: Redis;
  readonly #sub: Redis;
  readonly #queues = new Map<string, Queue>();
  readonly #workers = new Map<string, Worker>();
  readonly #waiting = new Map<string, Waiting>();
  #beat: NodeJS.Timeout | undefined;
  #pools: () => PoolSummary[] = () => [];
  #routed: (node: string) => RoutedBrief[] = () => [];
  /** Forwarded calls waiting in the queues of the versions this node serves, as of the last beat. */
  readonly #queued = new Map<string, number>();
  readonly #lease: ColdStartLease;
  readonly #presence: Presence;

  constructor(options: ClusterOptions) {
    this.#o = { heartbeatMs: 2000, leaseMs: 120_000, forwardTimeoutMs: 60_000, concurrency: 64, ...options };
    this.nodeId = options.nodeId;
    this.#redis = commandConnection(options.redisUrl);
    this.#redis.on('error', () => undefined);
    this.#lease = new ColdStartLease(this.#redis, this.#o.prefix, this.nodeId, this.#o.leaseMs);
    this.#presence = new Presence(this.#redis, this.#o.prefix, this.nodeId, this.#o.heartbeatMs);
    this.#sub = blockingConnection(options.redisUrl);
    this.#sub.on('error', () => undefined);
    this.#sub.on('message', (_channel: string, message: string) => this.#onReply(message));
    void this.#sub.subscribe(this.#replyChannel(this.nodeId)).catch(() => undefined);
  }

  /** Starts publishing this node (reachable at `httpUrl`), its pools and routed calls, and reading the others'. */
  start(pools: () => PoolSummary[], httpUrl: string, routed: (node: string) => RoutedBrief[] = () => []): void {
    this.#pools = pools;
    this.#routed = routed;
    this.#httpUrl = httpUrl;
    const beat = (): void => void this.#heartbeat().catch(() => undefined);
    beat();
    this.#beat = setInterval(beat, this.#o.heartbeatMs).unref();
  }

  /** The nodes seen alive at the last heartbeat (this one included). */
  get nodes(): readonly ClusterNode[] {
    return this.#presence.nodes;
  }

  /** Whether another live node holds this version warm. */
  warmElsewhere(name: string, version: number): boolean {
    return this.#presence.warmElsewhere(name, version);
  }

  /** Takes the version's cold-start lease: true for the one node that should load it now. */
  claimColdStart(name: string, version: number): Promise<boolean> {
    return this.#lease.claim(versionKey(name, version));
  }

  /** Gives the lease back (the pool is warm, failed or gone). */
  releaseColdStart(name: string, version: number): Promise<void> {
    return this.#lease.release(versionKey(name, version));
  }

  /** Takes or renews the lease of watching a function's canary: true while this node is its one watcher. */
  holdCanary(name: string): Promise<boolean> {
    return this.#lease.hold(`canary:${name}`, CANARY_LEASE_MS);
  }

  releaseCanary(name: string): Promise<void> {
    return this.#lease.release(`canary:${name}`);
  }

  /**
   * Sends a call to the nodes that hold the version, and waits for the answer. If the holder dies
   * or drops the version while the call still waits in the queue, `fallback` runs it here instead
   * (checked every heartbeat, once the holder is gone from the cluster's view).
   */
  async forward(
    name: string,
    version: number,
    call: Forwarded,
    deadline: number | undefined,
    fallback?: () => Promise<ForwardedReply>,
    signal?: AbortSignal,
  ): Promise<ForwardedReply> {
    // BullMQ job ids may not hold ":" (node ids do).
    const id = `call-${randomUUID()}`;
    const wallDeadline =
      deadline === undefined
        ? Date.now() + this.#o.forwardTimeoutMs
        : Date.now() + Math.max(0, deadline - performance.now());
    const answer = new Promise<ForwardedReply>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          this.#waiting.delete(id);
          reject(new DeadlineExceededError(`no node answered for ${name} v${version} in time`));
        },
        Math.max(0, wallDeadline - Date.now()),
      );
      this.#waiting.set(id, {
        resolve,
        reject,
        timer,
        name,
        version,
        since: Date.now(),
        ...(fallback ? { fallback } : {}),
      });
      // The caller went away: stop waiting, and take the call back if nobody has started it.
      signal?.addEventListener(
        'abort',
        () => {
          const waiting = this.#waiting.get(id);
          if (!waiting) return;
          this.#waiting.delete(id);
          clearTimeout(waiting.timer);
          void this.#queue(name, version)
            .getJob(id)
            .then(
              (job) => job?.remove(),
              () => undefined,
            )
            .catch(() => undefined);
          reject(new CancelledError('the request was cancelled'));
        },
        { once: true },
      );
    });
    const data: CallData = { call: encode(call), replyTo: this.nodeId, deadline: wallDeadline };
    try {
      await this.#queue(name, version).add('call', data, {
        jobId: id,
        attempts: 1,
        removeOnComplete: true,
        removeOnFail: true,
      });
    } catch (error) {
      const waiting = this.#waiting.get(id);
      clearTimeout(waiting?.timer);
      this.#waiting.delete(id);
      unavailable(error);
    }
    return answer;
  }

  /** Starts taking this version's forwarded calls on this node (it holds, or is loading, the pool). */
  serve(name: string, version: number, handler: LocalHandler): void {
    const key = versionKey(name, version);
    if (this.#workers.has(key)) return;
    const worker = new Worker<CallData>(
      this.#queueName(name, version),
      async (job: Job<CallData>) => {
        const { call, replyTo, deadline } = job.data;
        let reply: Reply;
        if (deadline !== undefined && Date.now() > deadline) return; // nobody waits any more
        try {
          const local = deadline === undefined ? undefined : performance.now() + (deadline - Date.now());
          reply = {
            id: job.id!,
            ok: true,
            result: encode(await handler(name, version, decode<Forwarded>(call), local)),
          };
        } catch (error) {
          reply = { id: job.id!, ok: false, error: errorBody(error) };
        }
        await this.#redis.publish(this.#replyChannel(replyTo), JSON.stringify(reply));
      },
      { ...bullConnection(this.#o.redisUrl, this.#o.prefix), concurrency: this.#o.concurrency },
    );
    worker.on('error', () => undefined);
    this.#workers.set(key, worker);
  }

  /** Stops taking the version's calls (its pool is gone from this node), and says so at once. */
  async stopServing(name: string, version: number): Promise<void> {
    const key = versionKey(name, version);
    const worker = this.#workers.get(key);
    this.#workers.delete(key);
    if (worker) await closeBounded([worker], () => redisUp(this.#redis));
    if (this.#beat) await this.#heartbeat().catch(() => undefined);
  }

  /** Calls for a version waiting in its cluster queue (for the autoscaler). */
  queued(name: string, version: number): number {
    return this.#queued.get(versionKey(name, version)) ?? 0;
  }

  /** Every live node's pools, this node's included. */
  pools(): PoolBrief[] {
    return this.#presence.pools();
  }

  /** Every live node's routed calls by version (./types.ts RoutedBrief), this node's included. */
  routed(): RoutedBrief[] {
    return this.#presence.routed();
  }

  async close(): Promise<void> {
    clearInterval(this.#beat);
    const up = () => redisUp(this.#redis);
    await closeBounded(this.#workers.values(), up);
    await closeBounded(this.#queues.values(), up, 5000);
    for (const [, w] of this.#waiting) {
      clearTimeout(w.timer);
      w.reject(new UnavailableError('this node is shutting down'));
    }
    await this.#presence.leave();
    this.#redis.disconnect();
    this.#sub.disconnect();
  }

  #replyChannel(node: string): string {
    return `${this.#o.prefix}reply:${node}`;
  }

  #queueName(name: string, version: number): string {
    return `warm.${name}.${version}`;
  }

  #queue(name: string, version: number): Queue {
    const key = versionKey(name, version);
    let queue = this.#queues.get(key);
    if (!queue) {
      queue = new Queue(this.#queueName(name, version), bullConnection(this.#o.redisUrl, this.#o.prefix));
      queue.on('error', () => undefined);
      this.#queues.set(key, queue);
    }
    return queue;
  }

  /** Calls waiting for a version no live node holds: taken back from the queue and run here. */
  async #reroute(): Promise<void> {
    const now = Date.now();
    for (const [id, w] of this.#waiting) {
      if (!w.fallback || now - w.since < this.#o.heartbeatMs * 2) continue;
      const held = this.#presence.nodes.some((n) =>
        n.pools.some(
          (p) => p.function === w.name && p.version === w.version && (p.state === 'warm' || p.state === 'loading'),
        ),
      );
      if (held) continue;
      const job = await this.#queue(w.name, w.version)
        .getJob(id)
        .catch(() => undefined);
      // A job a worker holds (locked) cannot be removed: its answer may still come.
      if (
        !job ||
        !(await job.remove().then(
          () => true,
          () => false,
        ))
      )
        continue;
      this.#waiting.delete(id);
      clearTimeout(w.timer);
      w.fallback().then(w.resolve, (error: unknown) =>
        w.reject(error instanceof HearthErrorClass ? error : new UnavailableError((error as Error).message)),
      );
    }
  }

  #onReply(message: string): void {
    const reply = JSON.parse(message) as Reply;
    const waiting = this.#waiting.get(reply.id);
    if (!waiting) return;
    this.#waiting.delete(reply.id);
    clearTimeout(waiting.timer);
    if (reply.ok) waiting.resolve(decode<ForwardedReply>(reply.result));
    else waiting.reject(errorFromBody(reply.error));
  }

  async #heartbeat(): Promise<void> {
    await this.#presence.beat(this.#pools(), this.#httpUrl, this.#routed(this.nodeId));
    await this.#reroute();
    for (const key of this.#workers.keys()) {
      const name = functionOfKey(key);
      this.#queued.set(
        key,
        await this.#queue(name, Number(key.slice(name.length + 1)))
          .getWaitingCount()
          .catch(() => 0),
      );
    }
  }
}
