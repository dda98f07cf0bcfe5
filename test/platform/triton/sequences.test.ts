/**
 * Stateful models under Triton's sequence batcher, as Triton's sequence examples drive them: each
 * request names its sequence (sequence_id, sequence_start, sequence_end); the model's control
 * inputs are filled per row. Answers are running sums, computed by hand here.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../../platform/node/index.js';
import { deployFolder } from '../../../sdk/cli/deploy.js';
import { Hearth } from '../../../sdk/client.js';
import { TRITON_REPO } from '../../helpers/fixtures.js';
import { grpcCall, inferenceClient, inferStream } from '../../helpers/grpc.js';
import { testNode } from '../../helpers/node.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-sequences-'));
let node: HearthNode;
let rpc: ReturnType<typeof inferenceClient>;

beforeAll(async () => {
  node = await testNode(join(dir, 'node'));
  rpc = inferenceClient(node.grpcAddress);
  const client = new Hearth({ url: node.httpUrl });
  for (const folder of ['simple_sequence', 'oldest_sequence', 'implicit_state'])
    expect((await deployFolder(client, join(TRITON_REPO, folder))).status).toBe('ready');
});
afterAll(async () => {
  rpc?.close();
  await node?.close();
  await rm(dir, { recursive: true, force: true });
});

async function send(
  model: string,
  value: number,
  parameters: Record<string, unknown>,
): Promise<{ status: number; value?: number; error?: string }> {
  const r = await fetch(`${node.httpUrl}/v2/models/${model}/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ parameters, inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: [value] }] }),
  });
  const body = (await r.json()) as { outputs?: { data: number[] }[]; error?: string };
  return { status: r.status, value: body.outputs?.[0]?.data[0], error: body.error };
}

/** Sends one sequence's values in order, each after the previous answer, as Triton's sync sequence clients do. */
async function sequence(model: string, id: number | string, values: number[]): Promise<number[]> {
  const out: number[] = [];
  for (const [i, v] of values.entries()) {
    const r = await send(model, v, { sequence_id: id, sequence_start: i === 0, sequence_end: i === values.length - 1 });
    expect(r.status, r.error).toBe(200);
    out.push(r.value!);
  }
  return out;
}

const sums = (values: number[]) => values.map((_, i) => values.slice(0, i + 1).reduce((a, b) => a + b, 0));

describe('sequence batching', () => {
  it('direct: interleaved sequences keep their own running sums (numeric and string ids)', async () => {
    const a = [1, 2, 3, 4, 5];
    const b = [10, 20, 30];
    const c = [100, -1, 7, 9];
    const [ra, rb, rc] = await Promise.all([
      sequence('simple_sequence', 1001, a),
      sequence('simple_sequence', 1002, b),
      sequence('simple_sequence', 'seq-c', c),
    ]);
    expect(ra).toEqual(sums(a));
    expect(rb).toEqual(sums(b));
    expect(rc).toEqual(sums(c));
    // A new sequence reuses a freed slot and starts from zero.
    expect(await sequence('simple_sequence', 1003, [5, 5])).toEqual([5, 10]);
  });

  it('oldest: state kept by CORRID across batches that move rows', async () => {
    const inputs = [
      [3, 1, 4, 1, 5],
      [9, 2, 6],
      [5, 3, 5, 8],
    ];
    const results = await Promise.all(inputs.map((values, i) => sequence('oldest_sequence', 7 + i, values)));
    results.forEach((r, i) => {
      expect(r).toEqual(sums(inputs[i]!));
    });
  });

  it("implicit state: the node keeps each sequence's state and feeds it back, answering only the outputs", async () => {
    // The model holds nothing: the running sum is the state Hearth keeps per sequence (zeros on
    // START) and the model returns it as OUTPUT_STATE. OUTPUT is the sum × 10 + the START flag.
    const inputs: [number | string, number[]][] = [
      [31, [3, 1, 4, 1, 5]],
      [32, [9, 2, 6]],
      ['implicit-c', [5, 3, 5, 8]],
      [34, [-7, 7, 100]],
      [35, [2, 2, 2, 2, 2, 2]],
    ];
    const expected = (values: number[]) => sums(values).map((sum, i) => sum * 10 + (i === 0 ? 1 : 0));
    const outputs = new Map<string, string[]>();
    const send = async (id: number | string, value: number, start: boolean, end: boolean) => {
      const r = await fetch(`${node.httpUrl}/v2/models/implicit_state/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          parameters: { sequence_id: id, sequence_start: start, sequence_end: end },
          inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: [value] }],
        }),
      });
      const body = (await r.json()) as { outputs?: { name: string; data: number[] }[]; error?: string };
      expect(r.status, body.error).toBe(200);
      outputs.set(
        String(id),
        body.outputs!.map((o) => o.name),
      );
      return body.outputs![0]!.data[0]!;
    };
    // Five sequences at once, over four batch rows: batches take whichever rows are oldest.
    const results = await Promise.all(
      inputs.map(async ([id, values]) => {
        const got: number[] = [];
        for (const [i, v] of values.entries()) got.push(await send(id, v, i === 0, i === values.length - 1));
        return got;
      }),
    );
    for (const [i, r] of results.entries()) expect(r).toEqual(expected(inputs[i]![1]));
    // The state output is the node's, not the client's.
    for (const names of outputs.values()) expect(names).toEqual(['OUTPUT']);
    // A sequence that ended starts from zero again under the same id; one that did not end keeps
    // its sum until it does.
    expect([await send(31, 4, true, false), await send(31, 6, false, false)]).toEqual([41, 100]);
    expect(await send(31, 1, false, true)).toBe(110);
    const config = (await (await fetch(`${node.httpUrl}/v2/models/implicit_state/config`)).json()) as {
      sequence_batching: { state: unknown[] };
      input: { name: string }[];
      output: { name: string }[];
    };
    expect(config.sequence_batching.state).toMatchObject([
      { input_name: 'INPUT_STATE', output_name: 'OUTPUT_STATE', data_type: 'TYPE_INT32', dims: [1] },
    ]);
    expect(config.input.map((t) => t.name)).toEqual(['INPUT']);
    expect(config.output.map((t) => t.name)).toEqual(['OUTPUT']);
  });

  it("refuses requests without a sequence id, without START on the first, and after END, with Triton's words", async () => {
    const none = await send('simple_sequence', 1, {});
    expect(none.status).toBe(400);
    expect(none.error).toMatch(/must specify a non-zero or non-empty correlation ID/);
    const noStart = await send('simple_sequence', 1, { sequence_id: 4242 });
    expect(noStart.status).toBe(400);
    expect(noStart.error).toBe(
      "inference request for sequence 4242 to model 'simple_sequence' must specify the START flag on the first request of the sequence",
    );
    await sequence('oldest_sequence', 77, [1, 2]);
    expect((await send('oldest_sequence', 1, { sequence_id: 77 })).status).toBe(400);
    const stringForCorrid = await send('oldest_sequence', 1, { sequence_id: 'abc', sequence_start: true });
    expect(stringForCorrid.status).toBe(400);
    expect(stringForCorrid.error).toMatch(/numeric sequence_id/);
    // An ordinary model takes no sequence id.
  });

  it('reports sequence_batching in the model config, as the config gave it', async () => {
    const config = (await (await fetch(`${node.httpUrl}/v2/models/oldest_sequence/config`)).json()) as Record<
      string,
      unknown
    >;
    expect(config.dynamic_batching).toBeUndefined();
    expect(config.sequence_batching).toMatchObject({
      control_input: [
        { name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', int32_false_true: [0, 1] }] },
        { name: 'END', control: [{ kind: 'CONTROL_SEQUENCE_END', int32_false_true: [0, 1] }] },
        { name: 'CORRID', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', data_type: 'TYPE_INT64' }] },
      ],
      oldest: { max_candidate_sequences: 8 },
    });
    const byGrpc = (await grpcCall(rpc, 'ModelConfig', { name: 'simple_sequence' })).config as {
      sequence_batching: { direct?: object; max_sequence_idle_microseconds: string };
    };
    expect(byGrpc.sequence_batching.direct).toBeDefined();
    expect(byGrpc.sequence_batching.max_sequence_idle_microseconds).toBe('5000000');
  });

  it("runs whole sequences sent over one gRPC stream without waiting (Triton's stream sequence client)", async () => {
    const { stream, responses, done } = inferStream(rpc);
    const seqs = { 2001: [0, 1, 2, 3, 4], 2002: [100, 200, 300] } as Record<string, number[]>;
    const longest = Math.max(...Object.values(seqs).map((v) => v.length));
    for (let i = 0; i < longest; i++) {
      for (const [id, values] of Object.entries(seqs)) {
        if (i >= values.length) continue;
        stream.write({
          model_name: 'simple_sequence',
          id: `${id}-${i}`,
          parameters: {
            sequence_id: { int64_param: id },
            sequence_start: { bool_param: i === 0 },
            sequence_end: { bool_param: i === values.length - 1 },
          },
          inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1] }],
          raw_input_contents: [Buffer.from(Int32Array.of(values[i]!).buffer)],
        });
      }
    }
    stream.end();
    await done;
    for (const [id, values] of Object.entries(seqs)) {
      const got = values.map((_, i) => {
        const r = responses.find((x) => (x.infer_response as { id: string }).id === `${id}-${i}`)!;
        expect(r.error_message).toBe('');
        return new Int32Array(
          new Uint8Array((r.infer_response as { raw_output_contents: Buffer[] }).raw_output_contents[0]!).buffer,
        )[0];
      });
      expect(got).toEqual(sums(values));
    }
  });
});
