/**
 * Triton's system shared memory extension, as its clients use it on one host: the client makes a
 * POSIX shared memory segment (here a file under /dev/shm, which is what shm_open makes), registers
 * it, sends inputs from it and asks for outputs into it; answers compared with python3-torch.
 * Regions belong to the API key that registered them.
 */
import { randomUUID } from 'node:crypto';
import { chown, mkdtemp, readFile, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../../platform/node/index.js';
import { deployFolder } from '../../../sdk/cli/deploy.js';
import { Hearth } from '../../../sdk/client.js';
import { TRITON_REPO } from '../../helpers/fixtures.js';
import { grpcCall, inferenceClient } from '../../helpers/grpc.js';
import { testNode } from '../../helpers/node.js';
import { maxAbsDiff, randomTensor } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';

const ADMIN = 'admin-key-0001';
const OTHER = 'other-key-0002';
const SHM = 'shm-key-00003';
const dir = await mkdtemp(join(tmpdir(), 'hearth-shm-'));
const id = randomUUID().slice(0, 8);
const IN = `/hearth-test-in-${id}`;
const OUT = `/hearth-test-out-${id}`;
let node: HearthNode;
let rpc: ReturnType<typeof inferenceClient>;

const a = randomTensor('FP32', [1, 4], 31);
const b = randomTensor('FP32', [1, 4], 32);
let expected: Float32Array[];

const auth = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
const post = (path: string, body: unknown, key = ADMIN) =>
  fetch(`${node.httpUrl}${path}`, { method: 'POST', headers: auth(key), body: JSON.stringify(body) });

beforeAll(async () => {
  node = await testNode(join(dir, 'node'), { HEARTH_API_KEYS: `${ADMIN}:admin,${OTHER}:invoke,${SHM}:shm` });
  rpc = inferenceClient(node.grpcAddress);
  expect(
    (await deployFolder(new Hearth({ url: node.httpUrl, apiKey: ADMIN }), join(TRITON_REPO, 'simple.shuffled_Args')))
      .status,
  ).toBe('ready');
  // INPUT1 at offset 0, INPUT0 at offset 16: the client's layout.
  await writeFile(`/dev/shm${IN}`, Buffer.concat([Buffer.from(a.data.buffer), Buffer.from(b.data.buffer)]));
  await writeFile(`/dev/shm${OUT}`, Buffer.alloc(64));
  const ref = pythonForward(join(TRITON_REPO, 'simple.shuffled_Args', '1', 'model.pt'), [b, a]); // forward(INPUT0, INPUT1)
  expected = ref.outputs.map((o) => o.data as Float32Array);
});
afterAll(async () => {
  rpc?.close();
  await node?.close();
  await rm(`/dev/shm${IN}`, { force: true });
  await rm(`/dev/shm${OUT}`, { force: true });
  await rm(dir, { recursive: true, force: true });
});

const shm = (region: string, offset: number, size = 16) => ({
  shared_memory_region: region,
  shared_memory_offset: offset,
  shared_memory_byte_size: size,
});

describe('system shared memory', () => {
  it('registers regions, reads inputs from one and writes outputs into another, over HTTP', async () => {
    expect(
      (await post('/v2/systemsharedmemory/region/in/register', { key: IN, offset: 0, byte_size: 32 })).status,
    ).toBe(200);
    expect(
      (await post('/v2/systemsharedmemory/region/out/register', { key: OUT, offset: 0, byte_size: 64 })).status,
    ).toBe(200);
    const status = await (await fetch(`${node.httpUrl}/v2/systemsharedmemory/status`, { headers: auth(ADMIN) })).json();
    expect(status).toEqual([
      { name: 'in', key: IN, offset: 0, byte_size: 32 },
      { name: 'out', key: OUT, offset: 0, byte_size: 64 },
    ]);
    const r = await post('/v2/models/simple.shuffled_Args/infer', {
      inputs: [
        { name: 'INPUT1', datatype: 'FP32', shape: [1, 4], parameters: shm('in', 0) },
        { name: 'INPUT0', datatype: 'FP32', shape: [1, 4], parameters: shm('in', 16) },
      ],
      outputs: [
        { name: 'OUTPUT0', parameters: shm('out', 0) },
        { name: 'OUTPUT1', parameters: shm('out', 16) },
      ],
    });
    expect(r.status).toBe(200);
    const body = (await r.json()) as {
      outputs: { name: string; data?: unknown; parameters: Record<string, unknown> }[];
    };
    expect(body.outputs[0]).toEqual({
      name: 'OUTPUT0',
      datatype: 'FP32',
      shape: [1, 4],
      parameters: { shared_memory_region: 'out', shared_memory_byte_size: 16 },
    });
    const written = await readFile(`/dev/shm${OUT}`);
    expect(maxAbsDiff(new Float32Array(written.buffer, written.byteOffset, 4), expected[0]!)).toBeLessThan(1e-6);
    expect(maxAbsDiff(new Float32Array(written.buffer, written.byteOffset + 16, 4), expected[1]!)).toBeLessThan(1e-6);
  });

  it('does the same over gRPC, with raw contents indexed over the inputs not in shared memory', async () => {
    await writeFile(`/dev/shm${OUT}`, Buffer.alloc(64));
    const meta = ADMIN;
    const p = (region: string, offset: number) => ({
      shared_memory_region: { string_param: region },
      shared_memory_offset: { int64_param: offset },
      shared_memory_byte_size: { int64_param: 16 },
    });
    const response = await grpcCall(
      rpc,
      'ModelInfer',
      {
        model_name: 'simple.shuffled_Args',
        inputs: [
          { name: 'INPUT1', datatype: 'FP32', shape: [1, 4], parameters: p('in', 0) },
          { name: 'INPUT0', datatype: 'FP32', shape: [1, 4] },
        ],
        raw_input_contents: [Buffer.from(b.data.buffer)],
        outputs: [{ name: 'OUTPUT0', parameters: p('out', 32) }, { name: 'OUTPUT1' }],
      },
      meta,
    );
    const raw = response.raw_output_contents as Buffer[];
    expect(raw[0]!.byteLength).toBe(0);
    expect(maxAbsDiff(new Float32Array(new Uint8Array(raw[1]!).buffer), expected[1]!)).toBeLessThan(1e-6);
    const written = await readFile(`/dev/shm${OUT}`);
    expect(maxAbsDiff(new Float32Array(written.buffer, written.byteOffset + 32, 4), expected[0]!)).toBeLessThan(1e-6);
    const status = (await grpcCall(rpc, 'SystemSharedMemoryStatus', { name: 'in' }, meta)).regions as Record<
      string,
      { key: string; byte_size: string }
    >;
    expect(status.in).toMatchObject({ key: IN, byte_size: '32' });
  });

  it("keeps each API key's regions its own", async () => {
    expect(
      await (await fetch(`${node.httpUrl}/v2/systemsharedmemory/status`, { headers: auth(OTHER) })).json(),
    ).toEqual([]);
    const r = await post(
      '/v2/models/simple.shuffled_Args/infer',
      {
        inputs: [
          { name: 'INPUT1', datatype: 'FP32', shape: [1, 4], parameters: shm('in', 0) },
          { name: 'INPUT0', datatype: 'FP32', shape: [1, 4], parameters: shm('in', 16) },
        ],
      },
      OTHER,
    );
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toMatch(/Unable to find system shared memory region: 'in'/);
    expect((await post('/v2/systemsharedmemory/unregister', {}, OTHER)).status).toBe(200);
    expect(
      (
        (await (
          await fetch(`${node.httpUrl}/v2/systemsharedmemory/status`, { headers: auth(ADMIN) })
        ).json()) as unknown[]
      ).length,
    ).toBe(2);
  });

  it('refuses keys that are not "/name", segments that do not exist, ranges past the segment, and outputs too small', async () => {
    for (const key of ['../etc/passwd', '/a/b', 'noslash', '/']) {
      const r = await post('/v2/systemsharedmemory/region/bad/register', { key, offset: 0, byte_size: 8 });
      expect(r.status).toBe(400);
    }
    expect(
      (
        await post('/v2/systemsharedmemory/region/bad/register', {
          key: `/hearth-missing-${id}`,
          offset: 0,
          byte_size: 8,
        })
      ).status,
    ).toBe(400);
    const past = await post('/v2/systemsharedmemory/region/bad/register', { key: IN, offset: 16, byte_size: 32 });
    expect(past.status).toBe(400);
    expect(((await past.json()) as { error: string }).error).toMatch(/runs past it/);
    expect(
      (await post('/v2/systemsharedmemory/region/in/register', { key: IN, offset: 0, byte_size: 32 })).status,
    ).toBe(400); // already registered
    const small = await post('/v2/models/simple.shuffled_Args/infer', {
      inputs: [
        { name: 'INPUT1', datatype: 'FP32', shape: [1, 4], parameters: shm('in', 0) },
        { name: 'INPUT0', datatype: 'FP32', shape: [1, 4], parameters: shm('in', 16) },
      ],
      outputs: [{ name: 'OUTPUT0', parameters: shm('out', 0, 8) }],
    });
    expect(small.status).toBe(400);
    expect(((await small.json()) as { error: string }).error).toMatch(
      /should be at least 16 bytes to hold the results/,
    );
    const error = await grpcCall(
      rpc,
      'SystemSharedMemoryRegister',
      { name: 'x', key: '/../../x', offset: 0, byte_size: 8 },
      ADMIN,
    ).catch((e: grpc.ServiceError) => e);
    expect((error as grpc.ServiceError).code).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it('lets only keys of scope shm or admin register a region; an invoke key gets 403', async () => {
    const refused = await post(
      '/v2/systemsharedmemory/region/mine/register',
      { key: IN, offset: 0, byte_size: 32 },
      OTHER,
    );
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: string }).error).toMatch(/needs scope shm or admin/);
    const overGrpc = await grpcCall(
      rpc,
      'SystemSharedMemoryRegister',
      { name: 'mine', key: IN, byte_size: 32 },
      OTHER,
    ).catch((e: grpc.ServiceError) => e);
    expect((overGrpc as grpc.ServiceError).code).toBe(grpc.status.PERMISSION_DENIED);
    expect(
      (await post('/v2/systemsharedmemory/region/mine/register', { key: IN, offset: 0, byte_size: 32 }, SHM)).status,
    ).toBe(200);
    expect((await post('/v2/systemsharedmemory/region/mine/unregister', {}, SHM)).status).toBe(200);
  });

  it.skipIf(process.getuid?.() !== 0)(
    "refuses another user's segment, which the node (root) could otherwise read and write",
    async () => {
      const theirs = `/hearth-test-theirs-${id}`;
      await writeFile(`/dev/shm${theirs}`, Buffer.from("another user's private bytes"), { mode: 0o600 });
      await chown(`/dev/shm${theirs}`, 65534, 65534);
      try {
        const r = await post('/v2/systemsharedmemory/region/theirs/register', {
          key: theirs,
          offset: 0,
          byte_size: 16,
        });
        expect(r.status).toBe(400);
        expect(((await r.json()) as { error: string }).error).toMatch(/belongs to another user \(uid 65534\)/);
        // A symbolic link to a file of the node's own is no segment either.
        await symlink(`/dev/shm${IN}`, `/dev/shm${theirs}-link`);
        const linked = await post('/v2/systemsharedmemory/region/linked/register', {
          key: `${theirs}-link`,
          byte_size: 16,
        });
        expect(linked.status).toBe(400);
      } finally {
        await rm(`/dev/shm${theirs}`, { force: true });
        await rm(`/dev/shm${theirs}-link`, { force: true });
      }
    },
  );

  it('answers 400 for a region truncated after it was registered, and stays up (no SIGBUS)', async () => {
    const cut = `/hearth-test-cut-${id}`;
    await writeFile(`/dev/shm${cut}`, Buffer.concat([Buffer.from(a.data.buffer), Buffer.from(b.data.buffer)]));
    try {
      expect(
        (await post('/v2/systemsharedmemory/region/cut/register', { key: cut, offset: 0, byte_size: 32 })).status,
      ).toBe(200);
      await truncate(`/dev/shm${cut}`, 0);
      const request = {
        inputs: [
          { name: 'INPUT1', datatype: 'FP32', shape: [1, 4], parameters: shm('cut', 0) },
          { name: 'INPUT0', datatype: 'FP32', shape: [1, 4], parameters: shm('cut', 16) },
        ],
      };
      const r = await post('/v2/models/simple.shuffled_Args/infer', request);
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: string }).error).toMatch(/now holds 0 bytes.*truncated/);
      // An output into it is refused the same way.
      const out = await post('/v2/models/simple.shuffled_Args/infer', {
        inputs: [
          { name: 'INPUT0', datatype: 'FP32', shape: [1, 4], data: [...b.data] },
          { name: 'INPUT1', datatype: 'FP32', shape: [1, 4], data: [...a.data] },
        ],
        outputs: [{ name: 'OUTPUT0', parameters: shm('cut', 0) }],
      });
      expect(out.status).toBe(400);
      // The node serves on; grown back, the region serves again.
      await writeFile(`/dev/shm${cut}`, Buffer.concat([Buffer.from(a.data.buffer), Buffer.from(b.data.buffer)]));
      expect((await post('/v2/models/simple.shuffled_Args/infer', request)).status).toBe(200);
    } finally {
      await post('/v2/systemsharedmemory/region/cut/unregister', {});
      await rm(`/dev/shm${cut}`, { force: true });
    }
  });

  it('is off, and says so, on a node told HEARTH_SYSTEM_SHARED_MEMORY=off', async () => {
    const off = await testNode(join(dir, 'off'), { HEARTH_SYSTEM_SHARED_MEMORY: 'off' });
    try {
      const r = await fetch(`${off.httpUrl}/v2/systemsharedmemory/region/in/register`, {
        method: 'POST',
        body: JSON.stringify({ key: IN, offset: 0, byte_size: 32 }),
        headers: { 'content-type': 'application/json' },
      });
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: string }).error).toMatch(/system shared memory is off on this node/);
      expect(((await (await fetch(`${off.httpUrl}/v2`)).json()) as { extensions: string[] }).extensions).not.toContain(
        'system_shared_memory',
      );
    } finally {
      await off.close();
    }
  });

  it('unregisters a region, after which requests naming it are refused', async () => {
    expect((await post('/v2/systemsharedmemory/region/in/unregister', {})).status).toBe(200);
    const status = (await (
      await fetch(`${node.httpUrl}/v2/systemsharedmemory/status`, { headers: auth(ADMIN) })
    ).json()) as { name: string }[];
    expect(status.map((s) => s.name)).toEqual(['out']);
    await grpcCall(rpc, 'SystemSharedMemoryUnregister', { name: '' }, ADMIN);
    expect(
      await (await fetch(`${node.httpUrl}/v2/systemsharedmemory/status`, { headers: auth(ADMIN) })).json(),
    ).toEqual([]);
  });
});
