/**
 * A trace's and a trace setting's lifetime: a sampled request whose client hangs up before its
 * answer is still written (as Triton writes it), and a model's own trace settings go with its
 * function — deployed again under the name, it starts from the global settings.
 */
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';

import * as grpc from '@grpc/grpc-js';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';

import { deployFolder } from '../../../sdk/cli/deploy.js';
import { TRITON_REPO } from '../../helpers/fixtures.js';
import { randomTensor } from '../../helpers/random.js';
import { nodeForFile } from '../../helpers/suite.js';
import { waitFor } from '../../helpers/wait.js';
import { jsonPoster, SIMPLE } from './requests.js';

const suite = nodeForFile('trace-lifecycle');
const postJson = jsonPoster(suite);
const SETTING = `/v2/models/${SIMPLE}/trace/setting`;

const deploy = async () => expect((await deployFolder(suite.client, join(TRITON_REPO, SIMPLE))).status).toBe('ready');
beforeAll(deploy);

afterEach(async () => {
  const clear = { trace_level: null, trace_rate: null, trace_count: null, log_frequency: null };
  expect((await postJson(SETTING, clear)).status).toBe(200);
});

type TraceRecord = Record<string, unknown>;

/** The trace file's records, once `done` holds for them (the timeout a failsafe: on the code before, never). */
const traceRecords = (done: (r: TraceRecord[]) => boolean) =>
  waitFor(
    'the trace in the trace file',
    async () =>
      JSON.parse(
        await readFile(join(suite.dir, 'node', 'traces', 'trace.json'), 'utf8').catch(() => '[]'),
      ) as TraceRecord[],
    done,
  );

/** The timestamps' names of the trace `head` starts. */
const stampsOf = (records: TraceRecord[], head: TraceRecord) =>
  records.filter((r) => r.id === head.id && r !== head).map((r) => (r.timestamps as { name: string }[])[0]!.name);

const settings = async () => (await (await fetch(`${suite.node.httpUrl}${SETTING}`)).json()) as Record<string, unknown>;

describe('trace lifetimes', () => {
  it('writes the trace of a request whose client hung up before its answer', async () => {
    expect((await postJson(SETTING, { trace_level: ['TIMESTAMPS'], trace_rate: '1', trace_count: '1' })).status).toBe(
      200,
    );
    const { hostname, port } = new URL(suite.node.httpUrl);
    const socket = connect(Number(port), hostname);
    await new Promise((resolve) => socket.once('connect', resolve));
    // Headers and part of a body: the request is sampled, then its client goes.
    socket.write(
      `POST /v2/models/${SIMPLE}/infer HTTP/1.1\r\nhost: ${hostname}:${port}\r\ncontent-type: application/json\r\ncontent-length: 10000\r\n\r\n{"inputs":`,
    );
    await waitFor('the request sampled', settings, (s) => s.trace_count === '0');
    socket.destroy();
    const records = await traceRecords((r) => r.some((x) => x.model_name === SIMPLE && !('request_id' in x)));
    const head = records.find((x) => x.model_name === SIMPLE && !('request_id' in x))!;
    expect(stampsOf(records, head)).toEqual(['HTTP_RECV_START']);
  });

  it('writes the trace of a gRPC call its client cancelled', async () => {
    const sampled = { trace_level: ['TIMESTAMPS'], trace_rate: '1', trace_count: '1' };
    expect((await postJson(SETTING, sampled)).status).toBe(200);
    const request = {
      model_name: SIMPLE,
      id: 'cancelled',
      inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'FP32', shape: ['1', '4'] })),
      raw_input_contents: [1, 2].map((seed) => Buffer.from(randomTensor('FP32', [1, 4], seed).data.buffer)),
    };
    // The node answers its initial metadata (x-request-id) as it takes the call: cancelled then.
    const ended = new Promise<grpc.ServiceError | null>((resolve) => {
      const call = (suite.rpc.ModelInfer as unknown as (...a: unknown[]) => grpc.ClientUnaryCall)(
        request,
        new grpc.Metadata(),
        resolve,
      );
      call.once('metadata', () => call.cancel());
    });
    await ended;
    await waitFor('the call sampled', settings, (s) => s.trace_count === '0');
    const records = await traceRecords((r) => r.some((x) => x.request_id === 'cancelled'));
    const head = records.find((x) => x.request_id === 'cancelled')!;
    expect(stampsOf(records, head)).toContain('GRPC_WAITREAD_END');
  });

  it("drops a model's own trace settings when its function is deleted: deployed again, it follows the global ones", async () => {
    expect((await postJson(SETTING, { trace_rate: '7', log_frequency: '3' })).status).toBe(200);
    expect(await settings()).toMatchObject({ trace_rate: '7', log_frequency: '3' });
    await suite.client.delete(SIMPLE);
    await deploy();
    expect(await settings()).toMatchObject({ trace_rate: '1000', log_frequency: '0' });
  });
});
