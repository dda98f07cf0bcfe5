/**
 * `hearth bench --protocol grpc` against a node serving TLS (HEARTH_TLS_CERT / HEARTH_TLS_KEY, a
 * certificate made by openssl here): with an https URL the gRPC channel speaks TLS whether or not
 * a CA file is given (the CA then from the default roots: here NODE_EXTRA_CA_CERTS for HTTP and
 * GRPC_DEFAULT_SSL_ROOTS_FILE_PATH for grpc-js, which does not read the former), as the HTTP routes
 * do; the server's own statistics count what it answered.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Agent, getGlobalDispatcher, setGlobalDispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../platform/node/index.js';
import type { BenchReport } from '../../sdk/index.js';
import { cliIn } from '../helpers/cli.js';
import { deployFixture, testNode } from '../helpers/node.js';
import { SMALL_SPEC } from '../helpers/specs.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-bench-tls-'));
const { hearth } = cliIn(dir);
const cert = join(dir, 'server.crt');
const name = 'bench-tls';
const dispatcher = getGlobalDispatcher();
const ROOTS = ['NODE_EXTRA_CA_CERTS', 'GRPC_DEFAULT_SSL_ROOTS_FILE_PATH'] as const;
const saved = ROOTS.map((k) => process.env[k]);
let node: HearthNode;

beforeAll(async () => {
  // A self-signed certificate for 127.0.0.1, its own CA.
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'server.key',
      '-out',
      'server.crt',
      '-days',
      '2',
    ].concat(['-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost']),
    { cwd: dir, stdio: 'pipe' },
  );
  node = await testNode(join(dir, 'node'), { HEARTH_TLS_CERT: cert, HEARTH_TLS_KEY: join(dir, 'server.key') });
  expect(node.httpUrl).toMatch(/^https:/);
  // This process trusts it for the deploy; the CLI's children through the default roots.
  setGlobalDispatcher(new Agent({ connect: { ca: readFileSync(cert) } }));
  for (const k of ROOTS) process.env[k] = cert;
  const r = await deployFixture(node.httpUrl, { ...SMALL_SPEC, name }, { model: 'small' });
  expect(r.status, await r.clone().text()).toBe(201);
}, 120_000);
afterAll(async () => {
  ROOTS.forEach((k, i) => {
    if (saved[i] === undefined) delete process.env[k];
    else process.env[k] = saved[i];
  });
  setGlobalDispatcher(dispatcher);
  await node?.close();
  await rm(dir, { recursive: true, force: true });
});

async function successes(): Promise<number> {
  const body = (await (await fetch(`${node.httpUrl}/v2/models/${name}/stats`)).json()) as {
    model_stats: { inference_stats: { success: { count: number } } }[];
  };
  return body.model_stats.reduce((n, m) => n + m.inference_stats.success.count, 0);
}

describe('hearth bench over TLS', () => {
  it.each([
    ['without a CA file', [] as string[]],
    ['with --ca-file', ['--ca-file', cert]],
  ])('loads a TLS node over gRPC with an https URL, %s', { timeout: 120_000 }, async (_, ca) => {
    const before = await successes();
    const r = await hearth(
      node.httpUrl,
      ...ca,
      '--json',
      'bench',
      name,
      '--protocol',
      'grpc',
      '--grpc-url',
      node.grpcAddress,
      '--requests',
      '8',
      '--warmup',
      '0',
    );
    expect(r.code, `${r.err}\n${r.out}`).toBe(0);
    const report = JSON.parse(r.out) as BenchReport;
    expect(report.steps[0]).toMatchObject({ requests: 8, ok: 8, errors: {} });
    expect((await successes()) - before).toBe(8);
  });
});
