import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import { describe, expect, it } from 'vitest';

import { HearthError } from '../errors.js';
import { bench } from './index.js';

/** A node whose model metadata is `metadata`: what `bench` resolves with it. */
async function benchAgainst(metadata: unknown): Promise<unknown> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(metadata));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    return await bench({ name: 'm', url, protocol: 'http', requests: 1, warmupMs: 0 }).catch((e: unknown) => e);
  } finally {
    server.close();
  }
}

describe("bench's KServe target", () => {
  it('refuses model metadata whose input has no whole-number shape, naming the model', async () => {
    for (const inputs of [
      [{ name: 'x', datatype: 'FP32', shape: 'big' }],
      [{ name: 'x', datatype: 'FP32', shape: [1.5] }],
      [{ name: 'x', shape: [4] }],
    ]) {
      const error = await benchAgainst({ name: 'm', inputs });
      expect(error).toBeInstanceOf(HearthError);
      expect((error as Error).message).toMatch(/model m's metadata/);
    }
  });
});
