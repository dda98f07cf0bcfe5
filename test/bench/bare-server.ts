/**
 * bench:ceiling's bare servers: a node:http server and a @grpc/grpc-js server that read each
 * request whole and answer with bytes fixed in advance — no parsing, batching, hooks or runners.
 * What they serve is the physical limit of this machine's I/O for the same bodies and responses.
 *
 * HTTP: PUT /__response?for=<path> (with the request's content-type in X-For-Content-Type) sets
 * the response to POST <path> with that content-type: the PUT's body and content-type. gRPC
 * ModelInfer answers one FP32 output of `width` values a row (1024 for models named *vec*, 1000
 * otherwise), as the zero-cost models do. Prints {"http": port, "grpc": port} once listening.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

import { PROTO_OPTIONS, PROTO_PATH } from '../../platform/grpc/index.js';

const responses = new Map<string, { type: string; body: Buffer }>();
const key = (path: string, type: string | undefined): string => `${path} ${type ?? ''}`;

const http = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://bare');
    if (req.method === 'PUT' && url.pathname === '/__response') {
      const forType = req.headers['x-for-content-type'] as string | undefined;
      responses.set(key(url.searchParams.get('for') ?? '', forType), {
        type: req.headers['content-type'] ?? 'application/octet-stream',
        body,
      });
      res.writeHead(204).end();
      return;
    }
    const canned = responses.get(key(url.pathname, req.headers['content-type']));
    if (!canned) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': canned.type, 'content-length': canned.body.length });
    res.end(canned.body);
  });
});
http.keepAliveTimeout = 65_000;
http.listen(0, '127.0.0.1');
await new Promise((resolve) => http.once('listening', resolve));

const definition = grpc.loadPackageDefinition(protoLoader.loadSync(PROTO_PATH, PROTO_OPTIONS)) as unknown as {
  inference: { GRPCInferenceService: grpc.ServiceClientConstructor };
};
const rows = new Map<number, Buffer>();
const server = new grpc.Server({ 'grpc.max_receive_message_length': 64 * 2 ** 20 });
server.addService(definition.inference.GRPCInferenceService.service, {
  ModelInfer(
    call: grpc.ServerUnaryCall<{ model_name: string; inputs: { shape: string[] }[] }, unknown>,
    done: grpc.sendUnaryData<unknown>,
  ) {
    const width = call.request.model_name.includes('vec') ? 1024 : 1000;
    const n = Number(call.request.inputs[0]?.shape[0] ?? 1);
    const raw = rows.get(n * width) ?? Buffer.alloc(n * width * 4);
    rows.set(n * width, raw);
    done(null, {
      model_name: call.request.model_name,
      model_version: '1',
      outputs: [{ name: 'y', datatype: 'FP32', shape: [n, width] }],
      raw_output_contents: [raw],
    });
  },
});
const grpcPort = await new Promise<number>((resolve, reject) =>
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, port) =>
    e ? reject(e) : resolve(port),
  ),
);
console.log(JSON.stringify({ http: (http.address() as AddressInfo).port, grpc: grpcPort }));
