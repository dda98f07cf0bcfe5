/**
 * Sequences belong to the caller that started them (issue 42): another API key's requests with the
 * same sequence_id name a different sequence — unknown to it, as Triton answers an unknown one —
 * and one caller may hold only half of a model's sequence slots, so its abandoned STARTs cannot
 * lock the model for everyone. Both transports. Answers are running sums, computed by hand here.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../../platform/node/index.js';
import { deployFolder } from '../../../sdk/cli/deploy.js';
import { Hearth } from '../../../sdk/client.js';
import { TRITON_REPO } from '../../helpers/fixtures.js';
import { grpcCall, inferenceClient } from '../../helpers/grpc.js';
import { testNode } from '../../helpers/node.js';

const A = 'key-a-0123456789';
const B = 'key-b-0123456789';
const ADMIN = 'key-admin-0123456789';
const dir = await mkdtemp(join(tmpdir(), 'hearth-sequence-callers-'));
let node: HearthNode;
let rpc: ReturnType<typeof inferenceClient>;

beforeAll(async () => {
  node = await testNode(join(dir, 'node'), { HEARTH_API_KEYS: `${A}:invoke,${B}:invoke,${ADMIN}:admin` });
  rpc = inferenceClient(node.grpcAddress);
  const client = new Hearth({ url: node.httpUrl, apiKey: ADMIN });
  // simple_sequence: direct, one instance of 4 batch slots, sequences idle for 5 s are released.
  expect((await deployFolder(client, join(TRITON_REPO, 'simple_sequence'))).status).toBe('ready');
});
afterAll(async () => {
  rpc?.close();
  await node?.close();
  await rm(dir, { recursive: true, force: true });
});

async function send(
  key: string,
  value: number,
  parameters: Record<string, unknown>,
): Promise<{ status: number; value?: number; error?: string }> {
  const r = await fetch(`${node.httpUrl}/v2/models/simple_sequence/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ parameters, inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: [value] }] }),
  });
  const body = (await r.json()) as { outputs?: { data: number[] }[]; error?: string };
  return { status: r.status, value: body.outputs?.[0]?.data[0], error: body.error };
}

async function sendGrpc(key: string, value: number, id: number, start: boolean, end: boolean): Promise<number> {
  const r = await grpcCall(
    rpc,
    'ModelInfer',
    {
      model_name: 'simple_sequence',
      parameters: {
        sequence_id: { int64_param: String(id) },
        sequence_start: { bool_param: start },
        sequence_end: { bool_param: end },
      },
      inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1] }],
      raw_input_contents: [Buffer.from(Int32Array.of(value).buffer)],
    },
    key,
  );
  return new Int32Array(new Uint8Array((r.raw_output_contents as Buffer[])[0]!).buffer)[0]!;
}

const ok = async (p: Promise<{ status: number; value?: number; error?: string }>) => {
  const r = await p;
  expect(r.status, r.error).toBe(200);
  return r.value;
};

describe('sequences per caller', () => {
  it("another caller's requests with the same id neither join, read, change nor end the sequence", async () => {
    expect(await ok(send(A, 5, { sequence_id: 4201, sequence_start: true }))).toBe(5);
    // B continuing A's id: an unknown sequence to B, answered as Triton answers one.
    const join = await send(B, 100, { sequence_id: 4201 });
    expect(join.status).toBe(400);
    expect(join.error).toBe(
      "inference request for sequence 4201 to model 'simple_sequence' must specify the START flag on the first request of the sequence",
    );
    const end = await send(B, 100, { sequence_id: 4201, sequence_end: true });
    expect(end.status).toBe(400);
    // B starting the same id starts B's own sequence, from zero; over gRPC too.
    expect(await ok(send(B, 7, { sequence_id: 4201, sequence_start: true }))).toBe(7);
    expect(await sendGrpc(B, 1, 4201, false, true)).toBe(8);
    expect(await sendGrpc(B, 2, 4201, false, false).catch((e: grpc.ServiceError) => e.details)).toMatch(
      /must specify the START flag/,
    );
    // A's sum went on untouched, and A ends it.
    expect(await ok(send(A, 3, { sequence_id: 4201 }))).toBe(8);
    expect(await ok(send(A, 2, { sequence_id: 4201, sequence_end: true }))).toBe(10);
  });

  it("one caller's abandoned STARTs hold at most half the slots: past that 429 / RESOURCE_EXHAUSTED, others go on", async () => {
    // A opens sequences and abandons them (no END): 2 of the model's 4 slots.
    expect(await ok(send(A, 1, { sequence_id: 4301, sequence_start: true }))).toBe(1);
    expect(await ok(send(A, 1, { sequence_id: 4302, sequence_start: true }))).toBe(1);
    const third = await send(A, 1, { sequence_id: 4303, sequence_start: true });
    expect(third.status).toBe(429);
    expect(third.error).toMatch(/2 sequences open on model 'simple_sequence'.*half of its 4 sequence slots/);
    const byGrpc = await sendGrpc(A, 1, 4304, true, false).catch((e: grpc.ServiceError) => e);
    expect((byGrpc as grpc.ServiceError).code).toBe(8); // RESOURCE_EXHAUSTED
    expect((byGrpc as grpc.ServiceError).details).toMatch(/the most one caller may hold/);
    // B still gets slots: two sequences at once, each with its own sum.
    expect(await ok(send(B, 10, { sequence_id: 4301, sequence_start: true }))).toBe(10);
    expect(await sendGrpc(B, 20, 4302, true, false)).toBe(20);
    expect(await ok(send(B, 1, { sequence_id: 4301, sequence_end: true }))).toBe(11);
    expect(await sendGrpc(B, 2, 4302, false, true)).toBe(22);
    // A's own sequences are still its own, and ending one gives A its slot back.
    expect(await ok(send(A, 4, { sequence_id: 4301, sequence_end: true }))).toBe(5);
    expect(await ok(send(A, 6, { sequence_id: 4303, sequence_start: true, sequence_end: true }))).toBe(6);
    expect(await ok(send(A, 1, { sequence_id: 4302, sequence_end: true }))).toBe(2);
  });
});
