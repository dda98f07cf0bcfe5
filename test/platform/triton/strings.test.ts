import { join } from 'node:path';

import { beforeAll, describe, expect, it } from 'vitest';

import { deployFolder } from '../../../sdk/cli/deploy.js';
import { TRITON_REPO } from '../../helpers/fixtures.js';
import { grpcCall } from '../../helpers/grpc.js';
import { nodeForFile } from '../../helpers/suite.js';

const suite = nodeForFile('triton-strings');

describe('BYTES / TYPE_STRING tensors, into TorchScript as List[str]', () => {
  // Hand-computed: the model upper-cases each string and returns its length.
  const words = ['hearth', 'Triton', 'a b c', ''];
  const upper = words.map((w) => w.toUpperCase());
  const lengths = words.map((w) => w.length);
  const serialized = (list: string[]) => {
    const parts = list.map((w) => Buffer.from(w));
    return Buffer.concat(parts.flatMap((p) => [Buffer.from(Uint32Array.of(p.byteLength).buffer), p]));
  };

  beforeAll(async () => {
    expect((await deployFolder(suite.client, join(TRITON_REPO, 'string_upper'))).status).toBe('ready');
  });

  it('takes JSON strings and answers JSON strings', async () => {
    const r = await fetch(`${suite.node.httpUrl}/v2/models/string_upper/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [4, 1], data: words }] }),
    });
    expect(r.status).toBe(200);
    const body = (await r.json()) as {
      outputs: { name: string; datatype: string; shape: number[]; data: unknown[] }[];
    };
    expect(body.outputs).toEqual([
      { name: 'OUTPUT0', datatype: 'BYTES', shape: [4, 1], data: upper },
      { name: 'OUTPUT1', datatype: 'INT64', shape: [4, 1], data: lengths },
    ]);
  });

  it('takes and answers length-prefixed binary strings; concurrent requests (batched when they meet) each get their own rows back', async () => {
    const one = async (list: string[]) => {
      const data = serialized(list);
      const header = Buffer.from(
        JSON.stringify({
          inputs: [
            {
              name: 'INPUT0',
              datatype: 'BYTES',
              shape: [list.length, 1],
              parameters: { binary_data_size: data.byteLength },
            },
          ],
          outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
        }),
      );
      const r = await fetch(`${suite.node.httpUrl}/v2/models/string_upper/infer`, {
        method: 'POST',
        headers: { 'inference-header-content-length': String(header.byteLength) },
        body: Buffer.concat([header, data]),
      });
      expect(r.status).toBe(200);
      const bytes = Buffer.from(await r.arrayBuffer());
      const length = Number(r.headers.get('inference-header-content-length'));
      const json = JSON.parse(bytes.subarray(0, length).toString()) as {
        outputs: { shape: number[]; parameters: { binary_data_size: number } }[];
      };
      expect(json.outputs[0]!.shape).toEqual([list.length, 1]);
      return bytes.subarray(length);
    };
    const lists = [['x', 'yz'], ['hello'], words];
    const answers = await Promise.all(lists.map(one));
    answers.forEach((got, i) => {
      expect(got.equals(serialized(lists[i]!.map((w) => w.toUpperCase())))).toBe(true);
    });
  });

  it('takes gRPC bytes_contents and raw contents', async () => {
    for (const request of [
      {
        inputs: [
          {
            name: 'INPUT0',
            datatype: 'BYTES',
            shape: [4, 1],
            contents: { bytes_contents: words.map((w) => Buffer.from(w)) },
          },
        ],
      },
      { inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [4, 1] }], raw_input_contents: [serialized(words)] },
    ]) {
      const response = await grpcCall(suite.rpc, 'ModelInfer', { model_name: 'string_upper', ...request });
      const raw = response.raw_output_contents as Buffer[];
      expect(Buffer.from(raw[0]!).equals(serialized(upper))).toBe(true);
      expect(Array.from(new BigInt64Array(new Uint8Array(raw[1]!).buffer), Number)).toEqual(lengths);
    }
  });

  it('refuses BYTES data whose lengths do not add up, with 400', async () => {
    const header = Buffer.from(
      JSON.stringify({
        inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, 1], parameters: { binary_data_size: 6 } }],
      }),
    );
    const r = await fetch(`${suite.node.httpUrl}/v2/models/string_upper/infer`, {
      method: 'POST',
      headers: { 'inference-header-content-length': String(header.byteLength) },
      body: Buffer.concat([header, Buffer.from([9, 0, 0, 0, 65, 66])]),
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toMatch(/BYTES element 0 says 9 byte\(s\) but 2 are left/);
  });
});
