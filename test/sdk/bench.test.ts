/**
 * `hearth bench` as a user runs it (the package's bin, a child process) against a real node with
 * the `small` fixture model: what it counts is checked against the server's own statistics API
 * (`GET /v2/models/NAME/stats`, read here independently), failing inputs show under their HTTP
 * status, gRPC and both KServe HTTP bodies carry load, rate mode sends rate × duration, and the
 * --json and --csv shapes are what the docs say.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../platform/node/index.js';
import type { BenchReport } from '../../sdk/index.js';
import { cliIn } from '../helpers/cli.js';
import { deployFixture, testNode } from '../helpers/node.js';
import { SLOW_SPEC, SMALL_SPEC } from '../helpers/specs.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-bench-'));
const { hearth } = cliIn(dir);
const plain = `bench-${randomUUID().slice(0, 8)}`;
const hooked = `bench-hook-${randomUUID().slice(0, 8)}`;
const slow = `bench-slow-${randomUUID().slice(0, 8)}`;
let node: HearthNode;
let url: string;

beforeAll(async () => {
  node = await testNode(join(dir, 'node'));
  url = node.httpUrl;
  const a = await deployFixture(url, { ...SMALL_SPEC, name: plain }, { model: 'small' });
  expect(a.status, await a.clone().text()).toBe(201);
  const b = await deployFixture(
    url,
    { ...SMALL_SPEC, name: hooked, hook: 'hook.ts', example: { x: [[1, 2, 3, 4]] } },
    { model: 'small', hook: 'echo' },
  );
  expect(b.status, await b.clone().text()).toBe(201);
  const c = await deployFixture(url, { ...SLOW_SPEC, name: slow }, { model: 'slow' });
  expect(c.status, await c.clone().text()).toBe(201);
}, 120_000);
afterAll(async () => {
  await node?.close();
  await rm(dir, { recursive: true, force: true });
});

/** The server's own success and failure counts of a model, summed over its versions. */
async function serverCounts(name: string): Promise<{ success: number; fail: number }> {
  const body = (await (await fetch(`${url}/v2/models/${name}/stats`)).json()) as {
    model_stats: { inference_stats: { success: { count: number }; fail: { count: number } } }[];
  };
  return body.model_stats.reduce(
    (sum, m) => ({
      success: sum.success + m.inference_stats.success.count,
      fail: sum.fail + m.inference_stats.fail.count,
    }),
    { success: 0, fail: 0 },
  );
}

/** `hearth bench` with --json: its exit code and report. */
async function benchJson(...args: string[]): Promise<{ code: number; report: BenchReport; err: string }> {
  const r = await hearth(url, '--json', 'bench', ...args);
  return { code: r.code, report: (r.out ? JSON.parse(r.out) : undefined) as BenchReport, err: r.err };
}

const total = (report: BenchReport, key: 'ok' | 'requests') => report.steps.reduce((n, s) => n + s[key], 0);

describe('hearth bench', () => {
  it(
    "counts exactly the successes the server's statistics count, over a concurrency sweep",
    { timeout: 120_000 },
    async () => {
      const before = await serverCounts(plain);
      const { code, report, err } = await benchJson(
        plain,
        '--concurrency',
        '1:4:x2',
        '--requests',
        '30',
        '--warmup',
        '0',
      );
      expect(code, err).toBe(0);
      const after = await serverCounts(plain);
      expect(report.steps.map((s) => s.step)).toEqual(['c=1', 'c=2', 'c=4']);
      expect(report.steps.map((s) => s.ok)).toEqual([30, 30, 30]);
      expect(report.input).toBe('random');
      expect(after.success - before.success).toBe(total(report, 'ok'));
      expect(after.fail - before.fail).toBe(0);
      for (const s of report.steps) {
        expect(s.errors).toEqual({});
        expect(s.server?.success).toBe(s.ok);
        expect(s.latencyMs.p50).toBeGreaterThan(0);
        expect(s.latencyMs.p99!).toBeGreaterThanOrEqual(s.latencyMs.p90!);
        expect(s.latencyMs.p90!).toBeGreaterThanOrEqual(s.latencyMs.p50!);
        expect(s.server?.computeInferUs).toBeGreaterThan(0);
        expect(s.clientCpuUs).toBeGreaterThan(0);
      }
    },
  );

  it("leaves its warm-up out of each step's count and the server's split", { timeout: 120_000 }, async () => {
    const before = await serverCounts(hooked);
    const { code, report, err } = await benchJson(
      hooked,
      '--concurrency',
      '2',
      '--requests',
      '20',
      '--warmup',
      '300ms',
    );
    expect(code, err).toBe(0);
    const after = await serverCounts(hooked);
    const [step] = report.steps;
    // The spec's example is what a function with a hook is sent by default.
    expect(report.input).toBe('example');
    expect(step!.ok).toBe(20);
    expect(step!.server?.success).toBe(20);
    // The warm-up ran too: the server saw more than the step counted.
    expect(after.success - before.success).toBeGreaterThan(20);
    expect(step!.server?.preUs).toBeGreaterThan(0);
    expect(step!.server?.postUs).toBeGreaterThan(0);
  });

  it(
    'counts failing inputs as errors under their HTTP status, and exits 1 when every request failed',
    { timeout: 120_000 },
    async () => {
      const good = JSON.stringify({ inputs: { x: [[1, 2, 3, 4]] } });
      const bad = JSON.stringify({ inputs: { x: [[1, 2, 3]] } });
      const mixed = join(dir, 'mixed.jsonl');
      await writeFile(mixed, `${good}\n${bad}\n`);
      const half = await benchJson(
        plain,
        '--input-file',
        mixed,
        '--requests',
        '20',
        '--concurrency',
        '3',
        '--warmup',
        '0',
      );
      expect(half.code, half.err).toBe(0);
      expect(half.report.input).toBe('file');
      expect(half.report.steps[0]).toMatchObject({ requests: 20, ok: 10, errors: { '400': 10 } });
      expect(half.report.steps[0]!.errorMessages['400']).toMatch(/shape|elements|dims|4/);

      const allBad = join(dir, 'bad.jsonl');
      await writeFile(allBad, `${bad}\n`);
      const none = await benchJson(plain, '--input-file', allBad, '--requests', '5', '--warmup', '0');
      expect(none.code).toBe(1);
      expect(none.report.steps[0]).toMatchObject({ requests: 5, ok: 0, errors: { '400': 5 } });
    },
  );

  it('loads the model over gRPC ModelInfer and over KServe HTTP, binary and JSON', { timeout: 120_000 }, async () => {
    for (const args of [
      ['--protocol', 'grpc', '--grpc-url', node.grpcAddress],
      ['--protocol', 'http'],
      ['--protocol', 'http', '--format', 'json'],
    ]) {
      const before = await serverCounts(plain);
      const { code, report, err } = await benchJson(
        plain,
        ...args,
        '--concurrency',
        '1,3',
        '--requests',
        '15',
        '--warmup',
        '0',
      );
      expect(code, err).toBe(0);
      expect(report.protocol).toBe(args[1]);
      expect(report.steps.map((s) => s.ok)).toEqual([15, 15]);
      expect((await serverCounts(plain)).success - before.success).toBe(30);
      expect(report.steps[1]!.server?.success).toBe(15);
    }
  });

  it(
    'counts a gRPC input the model refuses under its gRPC status, beside the ones it answers',
    { timeout: 120_000 },
    async () => {
      const request = (x: number[][]) =>
        JSON.stringify({ inputs: [{ name: 'x', shape: [x.length, x[0]!.length], datatype: 'FP32', data: x }] });
      const file = join(dir, 'grpc.jsonl');
      await writeFile(file, `${request([[1, 2, 3, 4]])}\n${request([[1, 2, 3]])}\n`);
      const before = await serverCounts(plain);
      const { code, report, err } = await benchJson(
        plain,
        '--protocol',
        'grpc',
        '--grpc-url',
        node.grpcAddress,
        '--input-file',
        file,
        '--requests',
        '10',
        '--warmup',
        '0',
      );
      expect(code, err).toBe(0);
      expect(report.steps[0]).toMatchObject({ requests: 10, ok: 5, errors: { INVALID_ARGUMENT: 5 } });
      expect((await serverCounts(plain)).success - before.success).toBe(5);
    },
  );

  it('sends rate × duration requests in rate mode', { timeout: 120_000 }, async () => {
    const before = await serverCounts(plain);
    const { code, report, err } = await benchJson(plain, '--rate', '20,40', '--duration', '1s', '--warmup', '0');
    expect(code, err).toBe(0);
    expect(report.mode).toBe('rate');
    expect(report.steps.map((s) => s.requests)).toEqual([20, 40]);
    expect(report.steps.map((s) => s.ok)).toEqual([20, 40]);
    expect((await serverCounts(plain)).success - before.success).toBe(60);
    const bounded = await benchJson(plain, '--rate', '100', '--requests', '12', '--warmup', '0');
    expect(bounded.report.steps[0]).toMatchObject({ step: 'rate=100', rate: 100, requests: 12, ok: 12 });
  });

  it('counts sends held past their time as late, and still sends every one', { timeout: 120_000 }, async () => {
    // The slow fixture's forward of 3000 rounds takes about 300 ms here (longer on a busy machine,
    // and a machine six times faster still takes over the 51 ms that would make no send late): one
    // in flight at 20 a second, every send after the first waits for the answer before it.
    const file = join(dir, 'slow.json');
    await writeFile(
      file,
      JSON.stringify({
        inputs: [
          { name: 'x', shape: [4, 512], datatype: 'FP32', data: new Array(2048).fill(0.01) },
          { name: 'n', shape: [], datatype: 'INT64', data: [3000] },
        ],
      }),
    );
    const before = await serverCounts(slow);
    const args = ['--protocol', 'http', '--input-file', file, '--rate', '20', '--max-in-flight', '1'];
    const { code, report, err } = await benchJson(slow, ...args, '--duration', '1s', '--warmup', '0');
    expect(code, err).toBe(0);
    const [step] = report.steps;
    expect(step).toMatchObject({ step: 'rate=20', requests: 20, ok: 20 });
    expect(step!.late).toBeGreaterThan(0);
    expect(step!.late).toBeLessThanOrEqual(19);
    expect((await serverCounts(slow)).success - before.success).toBe(20);
  });

  it('prints CSV a line per step, and the table for people', { timeout: 120_000 }, async () => {
    const csv = await hearth(url, 'bench', plain, '--concurrency', '1,2', '--requests', '5', '--warmup', '0', '--csv');
    expect(csv.code, csv.err).toBe(0);
    const [head, ...rows] = csv.out.trim().split('\n');
    const columns = head!.split(',');
    expect(columns.slice(0, 11)).toEqual([
      'step',
      'concurrency',
      'rate',
      'requests',
      'ok',
      'errors',
      'seconds',
      'req_per_s',
      'p50_ms',
      'p90_ms',
      'p99_ms',
    ]);
    expect(columns).toContain('client_cpu_us');
    expect(columns).toContain('queue_us');
    expect(rows).toHaveLength(2);
    const first = Object.fromEntries(rows[0]!.split(',').map((v, i) => [columns[i], v]));
    expect(first).toMatchObject({
      step: 'c=1',
      concurrency: '1',
      rate: '',
      requests: '5',
      ok: '5',
      errors: '',
      server_success: '5',
    });

    const table = await hearth(url, 'bench', plain, '--requests', '3', '--warmup', '0');
    expect(table.code, table.err).toBe(0);
    expect(table.out).toContain(`${plain}: POST ${url}/fn/${plain}, random inputs, closed loop`);
    expect(table.out).toMatch(/req\/s.*p50 ms.*p90 ms.*p99 ms/);
    expect(table.out).toContain('client µs/req');
  });

  it('refuses what cannot run with exit code 2, naming the option', { timeout: 120_000 }, async () => {
    for (const [args, message] of [
      [['--concurrency', '0'], '--concurrency'],
      [['--concurrency', '1:8'], 'is not a sweep'],
      [['--rate', '10', '--concurrency', '2'], 'not both'],
      [['--duration', 'soon'], '--duration'],
      [['--protocol', 'smtp'], '--protocol'],
      [['--rate', '5', '--max-in-flight', '0'], '--max-in-flight'],
      [['--timeout', '0'], '--timeout'],
    ] as const) {
      const r = await hearth(url, 'bench', plain, ...args);
      expect(r.code, r.err).toBe(2);
      expect(r.err).toContain(message);
    }
    const hookRandom = await hearth(url, 'bench', hooked, '--input', 'random', '--requests', '1');
    expect(hookRandom.code).toBe(2);
    expect(hookRandom.err).toContain('has a hook');
  });
});
