// The runner protocol's codecs: every message through JSON and back as the other side decodes it,
// and what a hostile runner could send instead refused.
import { describe, expect, it } from 'vitest';

import { parseSpec } from '../../../sdk/spec/index.js';
import type { PoolStats } from '../../pool/index.js';
import { newCounters } from '../../pool/index.js';
import type { Asked, FromRunner, ReplyFrame, ToRunner } from './protocol.js';
import {
  decodeFromRunner,
  decodeToRunner,
  packCall,
  packTensors,
  readReply,
  unpackCall,
  unpackTensors,
} from './protocol.js';

/** A header as it crosses: JSON, as the channel writes it. */
const wire = (header: object): unknown => JSON.parse(JSON.stringify(header));

const STATS: PoolStats = {
  ...newCounters(),
  state: 'warm',
  instances: { total: 2, idle: 1, busy: 1, loading: 0 },
  queueDepth: 3,
  pending: 4,
  hookThreads: 1,
  coldStart: { fetch: 0.1, load: 0.2, warmup: 0.01, queue: 0.4, source: 'cache' },
  latency: { p50Ms: 1.5, p99Ms: 9, of: 100 },
  batchSizes: { 4: 2 },
  batchCompute: { 4: { count: 2, totalUs: 80, maxUs: 50 } },
};
const SNAPSHOT = { stats: STATS, room: 5, device: 'cpu' };
const SPEC = parseSpec({
  name: 'f',
  model: 'model.pt',
  inputs: [{ name: 'x', dtype: 'FP32', dims: [4] }],
  outputs: [{ name: 'y', dtype: 'FP32', dims: [4] }],
});

describe('node → runner', () => {
  const sequence = { id: '18446744073709551615', big: true, start: true, end: false };
  const messages: ToRunner[] = [
    { t: 'start', id: 1, spec: SPEC, version: 2, model: '/m/model.pt', hookBundle: '/m/hook.js', waiting: 3 },
    { t: 'start', id: 2, spec: SPEC, version: 2, model: '/m/model.pt', waiting: 0, secrets: { KEY: 'v' } },
    { t: 'invoke', id: 3, contentType: 'application/json', remainingMs: 250.5, priority: 1 },
    { t: 'infer', id: 4, tensors: { x: { dtype: 'FP32', shape: [2, 4], blob: 0 } }, sequence },
    { t: 'stats', id: 5 },
    { t: 'drain', id: 6 },
    { t: 'stop', id: 7 },
    { t: 'cancel', id: 3 },
    { t: 'add' },
    { t: 'remove' },
  ];
  it.each(messages.map((m) => [m.t, m] as const))('%s round-trips', (_t, message) => {
    expect(decodeToRunner(wire(message))).toEqual(message);
  });

  it('carries a call’s options once: the time left, its priority, a uint64 sequence id as a bigint', () => {
    const signal = new AbortController().signal;
    const before = performance.now();
    const fields = packCall({ priority: 2, sequence: { id: 2n ** 64n - 1n, start: true, end: true } }, 100);
    expect(fields).toEqual({
      remainingMs: 100,
      priority: 2,
      sequence: { id: '18446744073709551615', big: true, start: true, end: true },
    });
    const options = unpackCall(decodeToRunner(wire({ t: 'infer', id: 1, tensors: {}, ...fields })) as never, signal);
    expect(options.sequence).toEqual({ id: 2n ** 64n - 1n, start: true, end: true });
    expect(options.priority).toBe(2);
    expect(options.signal).toBe(signal);
    expect(options.deadline).toBeGreaterThanOrEqual(before + 100);
    const named = unpackCall(packCall({ sequence: { id: 'abc', start: false, end: true } }, undefined), signal);
    expect(named).toEqual({
      deadline: undefined,
      signal,
      priority: undefined,
      sequence: { id: 'abc', start: false, end: true },
    });
    const caller = { id: 7n, start: true, end: false, caller: 'c0ffee' };
    expect(
      unpackCall(
        decodeToRunner(wire({ t: 'infer', id: 2, tensors: {}, ...packCall({ sequence: caller }, undefined) })) as never,
        signal,
      ).sequence,
    ).toEqual(caller);
  });

  it('refuses a message it does not know, or one missing a field', () => {
    expect(() => decodeToRunner(wire({ t: 'reboot', id: 1 }))).toThrow();
    expect(() => decodeToRunner(wire({ t: 'invoke', id: 1 }))).toThrow();
    expect(() => decodeToRunner(wire({ t: 'cancel' }))).toThrow();
  });
});

describe('runner → node', () => {
  const messages: FromRunner[] = [
    { t: 'hello', pid: 42 },
    {
      t: 'jail',
      pid: 4242,
      uid: 200001,
      layers: {
        namespaces: 'user,mnt,pid',
        privateProc: true,
        uid: true,
        landlock: 7,
        seccomp: true,
        cgroup: false,
        oomScoreAdj: 1000,
      },
      notes: ['no cgroup: the node may not make one'],
    },
    { t: 'snapshot', ...SNAPSHOT },
    { t: 'event', event: { at: 1, type: 'instance-added', state: 'warm', detail: '2 of 2' } },
    { t: 'hung', rows: 8, limitMs: 30000 },
  ];
  it.each(messages.map((m) => [m.t, m] as const))('%s round-trips', (_t, message) => {
    expect(decodeFromRunner(wire(message))).toEqual(message);
  });

  const replies: [Asked, object][] = [
    ['start', { ...SNAPSHOT, coldStart: { fetch: 0, load: 0.2, warmup: 0.01 } }],
    ['invoke', { contentType: 'image/png' }],
    ['infer', { tensors: { y: { dtype: 'FP32', shape: [2, 4], blob: 0 } } }],
    ['stats', SNAPSHOT],
    ['drain', { stats: STATS }],
    ['stop', {}],
  ];
  it.each(replies)('a reply to %s round-trips, checked as that reply', (kind, fields) => {
    const reply = { t: 'reply', id: 9, ok: true, ...fields };
    const frame = decodeFromRunner(wire(reply)) as ReplyFrame;
    expect(readReply(kind, frame)).toEqual(reply);
  });

  it('reads a failed reply as its error, whatever it answered', () => {
    const failed = { t: 'reply', id: 3, ok: false, error: { code: 'INVALID_INPUT', error: 'bad x', reason: 'shape' } };
    expect(readReply('infer', decodeFromRunner(wire(failed)) as ReplyFrame)).toEqual(failed);
  });

  it('refuses what a hostile runner could send in place of its figures or its answers', () => {
    const broken = [
      { t: 'snapshot', ...SNAPSHOT, stats: { ...STATS, instances: undefined } },
      { t: 'snapshot', ...SNAPSHOT, room: -1 },
      { t: 'snapshot', ...SNAPSHOT, stats: { ...STATS, state: 'pwned' } },
      { t: 'event', event: { at: 1, type: 'state', state: 'warm', detail: { toString: 1 } } },
      { t: 'hung', rows: '8' },
      { t: 'jail', pid: 1 },
      { t: 'reply', id: 'x', ok: true },
      { t: 'exec', cmd: 'sh' },
      ['not', 'an', 'object'],
    ];
    for (const header of broken) expect(() => decodeFromRunner(wire(header)), JSON.stringify(header)).toThrow();
    const reply = (fields: object): ReplyFrame =>
      decodeFromRunner(wire({ t: 'reply', id: 1, ok: true, ...fields })) as ReplyFrame;
    expect(() => readReply('invoke', reply({ contentType: 7 }))).toThrow();
    expect(() => readReply('infer', reply({}))).toThrow();
    expect(() => readReply('infer', reply({ tensors: { y: { dtype: 'FP32', shape: [2], blob: -1 } } }))).toThrow();
    expect(() => readReply('stats', reply({ stats: STATS }))).toThrow();
    expect(() => readReply('start', decodeFromRunner(wire({ t: 'reply', id: 1, ok: false })) as ReplyFrame)).toThrow();
  });
});

describe('tensors as blobs', () => {
  it('round-trip, and a blob that does not hold its shape is refused', () => {
    const blobs: Uint8Array[] = [];
    const tensors = {
      x: { dtype: 'FP32' as const, shape: [2, 2], data: Float32Array.of(1, 2, 3, 4) },
      n: { dtype: 'INT64' as const, shape: [1], data: BigInt64Array.of(-5n) },
    };
    const header = packTensors(tensors, blobs);
    expect(header).toEqual({
      x: { dtype: 'FP32', shape: [2, 2], blob: 0 },
      n: { dtype: 'INT64', shape: [1], blob: 1 },
    });
    expect(unpackTensors(header, blobs)).toEqual(tensors);
    expect(() => unpackTensors({ x: { dtype: 'FP32', shape: [3, 2], blob: 0 } }, blobs)).toThrow(/malformed/);
    expect(() => unpackTensors({ x: { dtype: 'FP99', shape: [2, 2], blob: 0 } }, blobs)).toThrow(/malformed/);
    expect(() => unpackTensors({ x: { dtype: 'FP32', shape: [2, 2], blob: 5 } }, blobs)).toThrow(/malformed/);
  });

  it('refuses outputs past the bytes a reply may carry, before viewing any', () => {
    const blobs: Uint8Array[] = [];
    const header = packTensors({ x: { dtype: 'FP32', shape: [4], data: Float32Array.of(1, 2, 3, 4) } }, blobs);
    expect(unpackTensors(header, blobs, 16).x!.shape).toEqual([4]);
    expect(() => unpackTensors(header, blobs, 15)).toThrow(
      /16 bytes of outputs, over its limit of 15 \(limits\.maxResponseMb\)/,
    );
  });
});
