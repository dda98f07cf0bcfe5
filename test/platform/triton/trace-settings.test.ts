/**
 * Triton's trace extension over HTTP and gRPC, sent exactly as tritonclient's
 * get_trace_settings / update_trace_settings send it (HTTP: GET, or POST of the settings dict as
 * JSON, None as null; gRPC: TraceSettingRequest, a value list per setting, None as an empty
 * SettingValue), answered in Triton's shapes; its update-and-clear sequence from Triton's own
 * qa/L0_trace/trace_endpoint_test.py; the refusals; and a sampled request's trace, written to the
 * node's trace folder with Triton's record shapes and ordered timestamps, which Triton's own
 * qa/common/trace_summary.py reads (test/fixtures/triton).
 */
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import * as grpc from '@grpc/grpc-js';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';

import { deployFolder } from '../../../sdk/cli/deploy.js';
import { PYTHON, REPO_ROOT, TRITON_REPO } from '../../helpers/fixtures.js';
import { grpcCall } from '../../helpers/grpc.js';
import { randomTensor } from '../../helpers/random.js';
import { nodeForFile } from '../../helpers/suite.js';
import { waitFor } from '../../helpers/wait.js';
import { jsonPoster, SIMPLE, simpleRequest } from './requests.js';

const suite = nodeForFile('trace-settings');
const postJson = jsonPoster(suite);
const SETTING = `/v2/models/${SIMPLE}/trace/setting`;

beforeAll(async () => {
  expect((await deployFolder(suite.client, join(TRITON_REPO, SIMPLE))).status).toBe('ready');
});

/** Triton's tearDown: every setting cleared, the model's and the global ones. */
afterEach(async () => {
  const clear = { trace_level: null, trace_rate: null, trace_count: null, log_frequency: null };
  expect((await postJson(SETTING, clear)).status).toBe(200);
  expect((await postJson('/v2/trace/setting', clear)).status).toBe(200);
});

/** tritonclient.http's update_trace_settings / get_trace_settings. */
async function http(settings?: Record<string, unknown>, model?: string): Promise<Record<string, unknown>> {
  const path = model ? `/v2/models/${encodeURIComponent(model)}/trace/setting` : '/v2/trace/setting';
  const r = settings ? await postJson(path, settings) : await fetch(`${suite.node.httpUrl}${path}`);
  const body = (await r.json()) as Record<string, unknown>;
  if (r.status !== 200) throw Object.assign(new Error(String(body.error)), { status: r.status });
  return body;
}

/** tritonclient.grpc's update_trace_settings / get_trace_settings: None is an empty SettingValue. */
async function rpc(settings: Record<string, string | string[] | null> = {}, model?: string) {
  const request = {
    ...(model ? { model_name: model } : {}),
    settings: Object.fromEntries(
      Object.entries(settings).map(([k, v]) => [k, v === null ? {} : { value: Array.isArray(v) ? v : [v] }]),
    ),
  };
  return (await grpcCall(suite.rpc, 'TraceSetting', request)).settings as Record<string, { value: string[] }>;
}

const asGrpc = (o: Record<string, string | string[]>) =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [k, { value: Array.isArray(v) ? v : [v] }]));

/** The node's defaults: Triton's (`--trace-config` unset), its file the node's own. */
const INITIAL = {
  trace_level: ['OFF'],
  trace_rate: '1000',
  trace_count: '-1',
  log_frequency: '0',
  trace_file: 'trace.json',
  trace_mode: 'triton',
};

describe("Triton's trace extension", () => {
  it("answers get_trace_settings in Triton's shapes, global and per model, over HTTP and gRPC", async () => {
    expect(await http()).toEqual(INITIAL);
    expect(await http(undefined, SIMPLE)).toEqual(INITIAL);
    expect(await rpc()).toEqual(asGrpc(INITIAL));
    expect(await rpc({}, SIMPLE)).toEqual(asGrpc(INITIAL));
    await expect(http(undefined, 'does-not-exist')).rejects.toThrow('Request for unknown model : does-not-exist');
    await expect(rpc({}, 'does-not-exist')).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: 'Request for unknown model : does-not-exist',
    });
  });

  it("updates and clears as Triton's test_http_clear_settings and test_grpc_clear_settings", async () => {
    type Send = (settings?: Record<string, string | string[] | null>, model?: string) => Promise<unknown>;
    type Shape = (o: Record<string, string | string[]>) => unknown;
    const transports: [Send, Shape][] = [
      [http, (o) => o],
      [rpc, asGrpc],
    ];
    for (const [send, shape] of transports) {
      await send({ trace_rate: '12', log_frequency: '34' }, SIMPLE);
      await send({ trace_rate: '56', trace_count: '78', trace_level: ['OFF'] });
      const global = { ...INITIAL, trace_level: ['OFF'], trace_rate: '1000', trace_count: '-1' };
      expect(await send({ trace_rate: null, trace_count: null })).toEqual(shape(global));
      expect(await send({}, SIMPLE)).toEqual(shape({ ...global, trace_rate: '12', log_frequency: '34' }));
      expect(await send({ trace_rate: null, trace_level: null }, SIMPLE)).toEqual(
        shape({ ...global, log_frequency: '34' }),
      );
      expect(await send()).toEqual(shape(global));
      // A global change reaches the model's fields it does not set.
      expect(await send({ trace_rate: '7' })).toEqual(shape({ ...global, trace_rate: '7' }));
      expect(await send({}, SIMPLE)).toEqual(shape({ ...global, trace_rate: '7', log_frequency: '34' }));
      await send({ log_frequency: null }, SIMPLE);
      await send({ trace_rate: null });
    }
  });

  it('refuses trace_file, TENSORS, bad values and unknown settings in Triton words, changing nothing', async () => {
    const refused = async (settings: Record<string, unknown>, status: number, code: grpc.status, words: string) => {
      const r = await postJson(SETTING, settings);
      expect(r.status, JSON.stringify(settings)).toBe(status);
      expect(((await r.json()) as { error: string }).error).toContain(words);
      const asRpc = Object.fromEntries(
        Object.entries(settings).map(([k, v]) => [k, { value: Array.isArray(v) ? v : [v] }]),
      );
      await expect(grpcCall(suite.rpc, 'TraceSetting', { model_name: SIMPLE, settings: asRpc })).rejects.toMatchObject({
        code,
      });
    };
    const { INVALID_ARGUMENT, UNIMPLEMENTED } = grpc.status;
    await refused(
      { trace_file: '/etc/passwd', trace_rate: '1' },
      400,
      UNIMPLEMENTED,
      'trace file location can not be updated through network protocol',
    );
    await refused(
      { trace_level: ['TIMESTAMPS', 'TENSORS'] },
      400,
      UNIMPLEMENTED,
      'trace level TENSORS is not supported',
    );
    await refused({ trace_level: ['OFF', 'TIMESTAMPS'] }, 400, INVALID_ARGUMENT, "Expect only one trace level 'OFF'");
    await refused({ trace_rate: '1e3' }, 400, INVALID_ARGUMENT, "Unable to parse 'trace_rate', got: 1e3");
    await refused({ trace_count: '-5' }, 400, INVALID_ARGUMENT, "Unable to parse 'trace_count'. Expecting value >= -1");
    await refused({ trace_ratio: '5' }, 400, INVALID_ARGUMENT, "unknown trace setting 'trace_ratio'");
    await refused(
      { trace_level: Array.from({ length: 100 }, () => 'TIMESTAMPS') },
      400,
      INVALID_ARGUMENT,
      'trace_level',
    );
    expect(await http(undefined, SIMPLE)).toEqual(INITIAL);
    const numbers = await postJson(SETTING, { trace_rate: 5 });
    expect(numbers.status).toBe(400);
  });

  it("writes a sampled request's trace, HTTP and gRPC, with Triton's records and ordered timestamps", async () => {
    // Every second request, two traces in all.
    await http({ trace_level: ['TIMESTAMPS'], trace_rate: '2', trace_count: '2' }, SIMPLE);
    const httpInfer = () => postJson(`/v2/models/${SIMPLE}/infer`, { id: 'req-h', ...simpleRequest(1) });
    // A client's own hearth-trace-read-start (the key the read start once travelled under) is not
    // taken for the call's start.
    const grpcInfer = () =>
      new Promise((resolve, reject) => {
        const md = new grpc.Metadata();
        md.set('hearth-trace-read-start', '42');
        suite.rpc.ModelInfer!(
          {
            model_name: SIMPLE,
            id: 'req-g',
            inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'FP32', shape: ['1', '4'] })),
            raw_input_contents: [1, 2].map((seed) => Buffer.from(randomTensor('FP32', [1, 4], seed).data.buffer)),
          },
          md,
          (error, r) => (error ? reject(error) : resolve(r)),
        );
      });
    for (const r of [await httpInfer(), await httpInfer()]) expect(r.status).toBe(200);
    await grpcInfer();
    await grpcInfer();
    // The count is spent: no third trace.
    expect((await httpInfer()).status).toBe(200);
    expect((await http(undefined, SIMPLE)).trace_count).toBe('0');

    const file = join(suite.dir, 'node', 'traces', 'trace.json');
    const records = await waitFor(
      'two traces in the trace file',
      async () => JSON.parse(await readFile(file, 'utf8').catch(() => '[]')) as Record<string, unknown>[],
      (r) => r.filter((x) => 'model_name' in x).length >= 2,
    );
    expect(new Set(records.map((r) => r.id)).size).toBe(2);
    const expected: Record<string, string[]> = {
      'req-h': ['HTTP_RECV_START', 'HTTP_RECV_END', 'REQUEST_START', 'REQUEST_END', 'HTTP_SEND_START', 'HTTP_SEND_END'],
      'req-g': [
        'GRPC_WAITREAD_START',
        'GRPC_WAITREAD_END',
        'REQUEST_START',
        'REQUEST_END',
        'GRPC_SEND_START',
        'GRPC_SEND_END',
      ],
    };
    for (const [requestId, names] of Object.entries(expected)) {
      const head = records.find((r) => r.request_id === requestId)!;
      expect(head).toEqual({ id: head.id, model_name: SIMPLE, model_version: 1, request_id: requestId });
      const mine = records.filter((r) => r.id === head.id && r !== head);
      const stamps = mine.map((r) => (r.timestamps as { name: string; ns: number }[])[0]!);
      expect(mine.every((r) => (r.timestamps as unknown[]).length === 1)).toBe(true);
      expect(stamps.map((s) => s.name)).toEqual(names);
      const ns = stamps.map((s) => s.ns);
      expect(ns[0]).not.toBe(42);
      expect(ns.every((t, j) => Number.isInteger(t) && t > 0 && (j === 0 || t >= ns[j - 1]!))).toBe(true);
    }
    // Triton's own summary tool reads the file: each transport's request, its handler and send spans.
    const summary = execFileSync(PYTHON, [join(REPO_ROOT, 'test/fixtures/triton/trace_summary.py'), file], {
      encoding: 'utf8',
    });
    expect(summary.match(new RegExp(`Summary for ${SIMPLE} \\(1\\): trace count = 1`, 'g'))).toHaveLength(2);
    expect(summary).toMatch(/HTTP infer request \(avg\): [\d.]+us/);
    expect(summary).toMatch(/GRPC infer request \(avg\): [\d.]+us/);
    expect(summary).toMatch(/Handler \(avg\): [\d.]+us/);
  });
});
