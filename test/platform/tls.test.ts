/**
 * TLS and mutual TLS on a real node, with certificates made by openssl at test time: plaintext is
 * refused, a client without a certificate or with one from another CA is refused, the right one is
 * served, on HTTP (the SDK with a CA file and a client certificate), gRPC and the metrics port; a
 * renewed server certificate is served without a restart.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';

import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { PROTO_OPTIONS, PROTO_PATH } from '../../platform/grpc/index.js';
import type { HearthNode } from '../../platform/node/index.js';
import { Hearth } from '../../sdk/client.js';
import { testNode } from '../helpers/node.js';
import { waitFor } from '../helpers/wait.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-tls-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const f = (name: string) => join(dir, name);
const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });

/** A new RSA key `name.key` and, by `rest`, a self-signed certificate or a signing request. */
const newKey = (name: string, ...rest: string[]) =>
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-subj', `/CN=${name}`, ...rest);

/** A CA, and certificates it signs (a server one for 127.0.0.1 and localhost, or a client one). */
function makeCa(name: string): void {
  newKey(name, '-x509', '-out', `${name}.crt`, '-days', '2');
}
function makeCert(name: string, ca: string, server: boolean, serial: string): void {
  newKey(name, '-out', `${name}.csr`);
  const ext = server
    ? 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n'
    : 'extendedKeyUsage=clientAuth\n';
  writeFileSync(f(`${name}.ext`), ext);
  openssl(
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.crt`,
    '-CAkey',
    `${ca}.key`,
    '-set_serial',
    serial,
    '-out',
    `${name}.crt`,
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
  );
}

interface Answer {
  status?: number;
  error?: string;
}

function get(url: string, options: { ca?: Buffer; cert?: Buffer; key?: Buffer } = {}): Promise<Answer> {
  const u = new URL(url);
  const request = u.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    const req = request(
      { host: u.hostname, port: u.port, path: u.pathname, method: 'GET', ...options, agent: false, timeout: 5000 },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode }));
      },
    );
    req.on('error', (e) => resolve({ error: (e as NodeJS.ErrnoException).code ?? e.message }));
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

function grpcLive(address: string, credentials: grpc.ChannelCredentials): Promise<string> {
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(PROTO_PATH, PROTO_OPTIONS)) as unknown as {
    inference: { GRPCInferenceService: grpc.ServiceClientConstructor };
  };
  const client = new pkg.inference.GRPCInferenceService(address, credentials) as unknown as grpc.Client &
    Record<string, (r: object, o: object, cb: (e: grpc.ServiceError | null, r?: { live: boolean }) => void) => void>;
  return new Promise((resolve) => {
    client.ServerLive!({}, { deadline: Date.now() + 5000 }, (error, reply) => {
      client.close();
      resolve(error ? `error ${grpc.status[error.code]}` : `live ${reply?.live}`);
    });
  });
}

/** The serial number of the certificate the node presents now. */
function servedSerial(port: number, ca: Buffer, cert: Buffer, key: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca, cert, key, servername: 'localhost' }, () => {
      resolve(socket.getPeerCertificate().serialNumber);
      socket.end();
    });
    socket.on('error', reject);
  });
}

describe('mutual TLS', () => {
  let node: HearthNode;
  const pem = (name: string) => readFileSync(f(name));
  beforeAll(async () => {
    makeCa('ca');
    makeCa('rogue-ca');
    makeCert('server', 'ca', true, '0x1001');
    makeCert('client', 'ca', false, '0x2001');
    makeCert('rogue', 'rogue-ca', false, '0x3001');
    node = await testNode(join(dir, 'node'), {
      HEARTH_TLS_CERT: f('server.crt'),
      HEARTH_TLS_KEY: f('server.key'),
      HEARTH_TLS_CLIENT_CA: f('ca.crt'),
    });
  });
  afterAll(() => node?.close());

  it('refuses plaintext, no certificate and another CA’s certificate on HTTP; serves the right one', async () => {
    expect(node.httpUrl).toMatch(/^https:/);
    const live = `${node.httpUrl}/v2/health/live`;
    const ca = pem('ca.crt');
    expect((await get(live.replace('https:', 'http:'))).status).toBeUndefined();
    expect((await get(live, { ca })).status).toBeUndefined();
    expect((await get(live, { ca, cert: pem('rogue.crt'), key: pem('rogue.key') })).status).toBeUndefined();
    expect(await get(live, { ca, cert: pem('client.crt'), key: pem('client.key') })).toEqual({ status: 200 });
    // The SDK (and so the CLI) with a CA file and a client certificate.
    const sdk = new Hearth({
      url: node.httpUrl,
      caFile: f('ca.crt'),
      certFile: f('client.crt'),
      keyFile: f('client.key'),
    });
    expect(await sdk.ready()).toBe(true);
    const without = new Hearth({ url: node.httpUrl, caFile: f('ca.crt') });
    expect(await without.ready()).toBe(false);
  });

  it('does the same on gRPC and on the metrics port', async () => {
    const ca = pem('ca.crt');
    expect(await grpcLive(node.grpcAddress, grpc.credentials.createInsecure())).toMatch(/^error/);
    expect(await grpcLive(node.grpcAddress, grpc.credentials.createSsl(ca))).toMatch(/^error/);
    expect(
      await grpcLive(node.grpcAddress, grpc.credentials.createSsl(ca, pem('rogue.key'), pem('rogue.crt'))),
    ).toMatch(/^error/);
    expect(await grpcLive(node.grpcAddress, grpc.credentials.createSsl(ca, pem('client.key'), pem('client.crt')))).toBe(
      'live true',
    );
    expect((await get(node.metricsUrl, { ca })).status).toBeUndefined();
    expect(await get(node.metricsUrl, { ca, cert: pem('client.crt'), key: pem('client.key') })).toEqual({
      status: 200,
    });
  });

  it('serves a renewed certificate without a restart', async () => {
    const port = Number(new URL(node.httpUrl).port);
    const [ca, cert, key] = [pem('ca.crt'), pem('client.crt'), pem('client.key')];
    expect(await servedSerial(port, ca, cert, key)).toBe('1001');
    // As cert-manager renews: new files moved into place.
    makeCert('renewed', 'ca', true, '0x1002');
    renameSync(f('renewed.key'), f('server.key'));
    renameSync(f('renewed.crt'), f('server.crt'));
    const grpcPort = Number(node.grpcAddress.split(':').at(-1));
    for (const [where, at] of [
      ['HTTP', port],
      ['gRPC', grpcPort],
    ] as const)
      await waitFor(
        `the renewed certificate on ${where}`,
        () => servedSerial(at, ca, cert, key),
        (s) => s === '1002',
        {
          intervalMs: 250,
        },
      );
  });
});
