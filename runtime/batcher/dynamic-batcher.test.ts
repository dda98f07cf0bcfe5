import { describe, expect, it } from 'vitest';

import {
  CancelledError,
  DeadlineExceededError,
  type HearthError,
  InvalidInputError,
  QueueFullError,
  UnavailableError,
} from '../../sdk/errors.js';
import { BatchingSchema } from '../../sdk/spec/spec-parts.js';
import { ManualClock } from './clock.js';
import type { BatchEntry, BatcherOptions } from './dynamic-batcher.js';
import { DynamicBatcher } from './dynamic-batcher.js';

/** The spec's batching defaults (sdk/spec/function-spec.test.ts checks them), with batches of up to 8. */
const defaults: BatcherOptions = {
  maxBatchSize: 8,
  ...BatchingSchema.parse({}),
};

function setup(options: Partial<BatcherOptions> = {}, instances = 1) {
  const clock = new ManualClock();
  const batches: string[][] = [];
  const rejected: [string, HearthError][] = [];
  const incoming = { count: 0 };
  const batcher = new DynamicBatcher<string>(
    { ...defaults, ...options },
    (b: BatchEntry<string>[]) => batches.push(b.map((e) => e.payload)),
    clock,
    () => incoming.count,
  );
  for (let i = 0; i < instances; i++) batcher.addInstance();
  const enqueue = (
    id: string,
    rows = 1,
    extra: { signature?: string; priority?: number; timeoutUs?: number; signal?: AbortSignal; requests?: number } = {},
  ): void =>
    batcher.enqueue(
      id,
      {
        rows,
        signature: extra.signature ?? 's',
        priority: extra.priority,
        timeoutUs: extra.timeoutUs,
        signal: extra.signal,
        requests: extra.requests,
      },
      (e) => rejected.push([id, e]),
    );
  /** Enqueues the ids one `gapUs` apart. */
  const arrive = (ids: string[], gapUs = 10): void =>
    ids.forEach((id, i) => {
      if (i > 0) clock.advance(gapUs);
      enqueue(id);
    });
  return { clock, batcher, batches, rejected, enqueue, arrive, incoming };
}

describe('dynamic batcher', () => {
  it('runs a request at once when an instance is idle and nothing else is queued, whatever the delay', () => {
    const { batches, enqueue } = setup({ preferredBatchSizes: [4], maxQueueDelayUs: 100_000 });
    enqueue('a');
    expect(batches).toEqual([['a']]);
  });

  it('batches the requests that arrive together (gather) in one decision, after they are all queued', () => {
    const { batcher, batches, enqueue } = setup();
    batcher.gather(() => {
      for (const id of ['a', 'b', 'c']) enqueue(id);
    });
    expect(batches).toEqual([['a', 'b', 'c']]);
    // Outside gather the first of them would have left alone.
    batcher.release();
    for (const id of ['d', 'e', 'f']) enqueue(id);
    expect(batches.slice(1)).toEqual([['d']]);
  });

  it('queues while every instance is busy and forms the next batch on release', () => {
    const { batcher, batches, enqueue } = setup();
    enqueue('a');
    enqueue('b');
    enqueue('c');
    expect(batches).toEqual([['a']]);
    expect(batcher.queueDepth).toBe(2);
    batcher.release();
    expect(batches).toEqual([['a'], ['b', 'c']]);
    expect(batcher.queueDepth).toBe(0);
  });

  it('takes the largest preferred batch size that the queue can form', () => {
    const { batcher, batches, enqueue } = setup({ preferredBatchSizes: [2, 4] });
    enqueue('busy');
    for (const id of ['1', '2', '3', '4', '5']) enqueue(id);
    batcher.release();
    expect(batches[1]).toEqual(['1', '2', '3', '4']);
    batcher.release();
    expect(batches[2]).toEqual(['5']);
  });

  it('else takes the largest batch up to maxBatchSize', () => {
    const { batcher, batches, enqueue } = setup({ maxBatchSize: 4 });
    enqueue('busy');
    for (const id of ['1', '2', '3', '4', '5', '6']) enqueue(id);
    batcher.release();
    batcher.release();
    expect(batches.slice(1)).toEqual([
      ['1', '2', '3', '4'],
      ['5', '6'],
    ]);
  });

  it("counts a request's own rows and never splits a request", () => {
    const { batcher, batches, enqueue } = setup({ maxBatchSize: 8 });
    enqueue('busy');
    enqueue('five', 5);
    enqueue('three', 3);
    enqueue('two', 2);
    batcher.release();
    batcher.release();
    expect(batches.slice(1)).toEqual([['five', 'three'], ['two']]);
    expect(() => enqueue('nine', 9)).toThrow(InvalidInputError);
  });

  it('never batches requests whose signatures differ, and keeps FIFO order', () => {
    const { batcher, batches, enqueue } = setup();
    enqueue('busy');
    enqueue('a1', 1, { signature: 'A' });
    enqueue('b1', 1, { signature: 'B' });
    enqueue('a2', 1, { signature: 'A' });
    batcher.release();
    batcher.release();
    batcher.release();
    expect(batches.slice(1)).toEqual([['a1'], ['b1'], ['a2']]);
  });

  it('runs requests without a batch dimension one at a time', () => {
    const { batcher, batches, enqueue } = setup({ maxBatchSize: 0 });
    enqueue('a');
    enqueue('b');
    enqueue('c');
    batcher.release();
    expect(batches).toEqual([['a'], ['b']]);
  });

  it('with an instance idle, waits for a preferred size that the arrival rate says is about to fill', () => {
    const { clock, batcher, batches, enqueue, arrive } = setup({ preferredBatchSizes: [4], maxQueueDelayUs: 1000 });
    arrive(['busy', '1', '2']);
    clock.advance(10);
    batcher.release(); // 2 queued, one every 10 µs: 4 would be there by t=50, well inside the delay
    expect(batches).toEqual([['busy']]);
    clock.advance(10);
    enqueue('3');
    expect(batches).toEqual([['busy']]);
    clock.advance(10);
    enqueue('4');
    expect(batches).toEqual([['busy'], ['1', '2', '3', '4']]);
  });

  it('dispatches what it has when the delay runs out', () => {
    const { clock, batcher, batches, arrive } = setup({ preferredBatchSizes: [4], maxQueueDelayUs: 1000 });
    arrive(['busy', '1', '2']);
    batcher.release();
    expect(batches).toEqual([['busy']]);
    clock.advance(989);
    expect(batches).toEqual([['busy']]);
    clock.advance(1);
    expect(batches).toEqual([['busy'], ['1', '2']]);
  });

  it('does not wait when arrivals are too slow to fill a preferred size within the delay', () => {
    const { clock, batcher, batches, enqueue } = setup({ preferredBatchSizes: [8], maxQueueDelayUs: 1000 });
    enqueue('busy');
    clock.advance(900);
    enqueue('1');
    clock.advance(900);
    enqueue('2');
    batcher.release();
    expect(batches).toEqual([['busy'], ['1', '2']]);
  });

  it('at concurrency 1 in steady state (spaced arrivals, nothing on its way) never waits', () => {
    const { clock, batcher, batches, enqueue } = setup({ maxQueueDelayUs: 5000 });
    for (let i = 0; i < 5; i++) {
      enqueue(String(i));
      expect(batches).toHaveLength(i + 1);
      clock.advance(300);
      batcher.release();
      clock.advance(20);
    }
  });

  it('waits for requests already on their way when they fill the batch, up to the delay', () => {
    const { clock, batcher, batches, enqueue, incoming } = setup({ maxBatchSize: 4, maxQueueDelayUs: 1000 });
    incoming.count = 3; // three requests in their pre hook
    enqueue('1');
    expect(batches).toEqual([]);
    for (const id of ['2', '3', '4']) {
      incoming.count--;
      clock.advance(100);
      enqueue(id);
    }
    expect(batches).toEqual([['1', '2', '3', '4']]);
    // Demand that never comes costs at most the delay.
    batcher.release();
    incoming.count = 3;
    enqueue('5');
    expect(batches).toHaveLength(1);
    clock.advance(1000);
    expect(batches).toEqual([['1', '2', '3', '4'], ['5']]);
  });

  it('rejects a request whose timeout passes in the queue, without running it', () => {
    const { clock, batcher, batches, rejected, enqueue } = setup({ defaultTimeoutUs: 100 });
    enqueue('busy');
    enqueue('late');
    enqueue('own', 1, { timeoutUs: 500 });
    clock.advance(150);
    expect(rejected.map(([id]) => id)).toEqual(['late']);
    expect(rejected[0]![1]).toBeInstanceOf(DeadlineExceededError);
    batcher.release();
    expect(batches).toEqual([['busy'], ['own']]);
  });

  it('refuses a request when the queue is full', () => {
    const { enqueue, batcher } = setup({ maxQueueSize: 2 });
    enqueue('busy');
    enqueue('1');
    enqueue('2');
    expect(() => enqueue('3')).toThrow(QueueFullError);
    expect(batcher.queueDepth).toBe(2);
  });

  it("counts a gathered call as the callers' requests it carries, in the queue's bound and depth", () => {
    const { enqueue, batcher, batches, rejected } = setup({ maxQueueSize: 4 });
    enqueue('busy');
    enqueue('three', 3, { requests: 3 });
    expect(() => enqueue('two', 2, { requests: 2 })).toThrow(QueueFullError);
    const controller = new AbortController();
    enqueue('one', 1, { signal: controller.signal });
    expect(batcher.queueDepth).toBe(4);
    controller.abort();
    expect(rejected.map(([id]) => id)).toEqual(['one']);
    expect(batcher.queueDepth).toBe(3);
    batcher.release();
    expect(batches).toEqual([['busy'], ['three']]);
    expect(batcher.queueDepth).toBe(0);
    enqueue('four', 4, { requests: 4 });
    expect(batcher.queueDepth).toBe(4);
  });

  it('takes a cancelled request out of the queue and its batch slot', () => {
    const { batcher, batches, rejected, enqueue } = setup();
    enqueue('busy');
    const controller = new AbortController();
    enqueue('1');
    enqueue('gone', 1, { signal: controller.signal });
    enqueue('3');
    controller.abort();
    expect(rejected.map(([id, e]) => [id, e instanceof CancelledError])).toEqual([['gone', true]]);
    expect(batcher.queueDepth).toBe(2);
    batcher.release();
    expect(batches[1]).toEqual(['1', '3']);
    const aborted = new AbortController();
    aborted.abort();
    expect(() => enqueue('never', 1, { signal: aborted.signal })).toThrow(CancelledError);
  });

  it('batches higher priority levels first, FIFO within a level', () => {
    const { batcher, batches, enqueue } = setup({ priorityLevels: 3, defaultPriorityLevel: 2, maxBatchSize: 2 });
    enqueue('busy');
    enqueue('low', 1, { priority: 3 });
    enqueue('mid1');
    enqueue('high', 1, { priority: 1 });
    enqueue('mid2');
    batcher.release();
    batcher.release();
    batcher.release();
    expect(batches.slice(1)).toEqual([
      ['high', 'mid1'],
      ['mid2', 'low'],
    ]);
    expect(() => enqueue('bad', 1, { priority: 4 })).toThrow(InvalidInputError);
  });

  it('dispatches to every idle instance', () => {
    const { batches, enqueue } = setup({}, 2);
    enqueue('a');
    enqueue('b');
    enqueue('c');
    expect(batches).toEqual([['a'], ['b']]);
  });

  it('drains: refuses new requests and resolves once queued and running batches are done', async () => {
    const { batcher, enqueue } = setup();
    enqueue('busy');
    enqueue('queued');
    let drained = false;
    const done = batcher.drain().then(() => {
      drained = true;
    });
    expect(() => enqueue('new')).toThrow(UnavailableError);
    batcher.release();
    await Promise.resolve();
    expect(drained).toBe(false);
    batcher.release();
    await done;
    expect(drained).toBe(true);
  });
});
