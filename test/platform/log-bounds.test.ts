/**
 * Logs bounded by bytes (issue 42): a hook bundle whose inline source map names its sources at
 * attacker's length, failing every call — each failure's mapped stack cut after mapping, so the
 * function's log and the node's (its own process, pino on stdout) hold a bounded amount; and a
 * runner with a hook stopped (unloaded) writes no isolated-vm assertion into the function's log.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Hearth } from '../../sdk/client.js';
import { modelPath } from '../helpers/fixtures.js';
import type { NodeProcess } from '../helpers/node.js';
import { postFunction, spawnNode, upload } from '../helpers/node.js';
import { SMALL_SPEC } from '../helpers/specs.js';
import { waitFor } from '../helpers/wait.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-log-bounds-'));
/** The node's log lines, from when it listens. */
const nodeLines: string[] = [];
let node: NodeProcess;

/**
 * A hook that recurses 100 calls deep and throws, its frames kept (stackTraceLimit 100), with an
 * inline map that maps every bundle line to one source named with `nameBytes` characters: before
 * the fix, each failed call logged 20 frames × that name.
 */
function hostileBundle(nameBytes: number): Uint8Array {
  const code = [
    'Error.stackTraceLimit = 100;',
    "const recurse = (n) => { if (n === 0) throw new Error('deep'); return recurse(n - 1) + 1; };",
    'export default {',
    '  pre(request) { recurse(100); },',
    '  post() { return {}; },',
    '};',
  ];
  const map = { version: 3, sources: ['s'.repeat(nameBytes)], names: [], mappings: code.map(() => 'AAAA').join(';') };
  const url = `data:application/json;base64,${Buffer.from(JSON.stringify(map)).toString('base64')}`;
  return new TextEncoder().encode(`${code.join('\n')}\n//# sourceMappingURL=${url}\n`);
}

beforeAll(async () => {
  node = await spawnNode(join(dir, 'node'), {}, (line) => nodeLines.push(line));
  const model = await upload(node.url, new Uint8Array(await readFile(modelPath('small'))));
  const hook = await upload(node.url, hostileBundle(512 * 1024));
  const r = await postFunction(node.url, {
    spec: { ...SMALL_SPEC, name: 'named', hook: 'hook.ts' },
    artifacts: { model, hook },
  });
  expect(r.status, await r.clone().text()).toBe(201);
});
afterAll(async () => {
  node?.child.kill('SIGTERM');
  await node?.exited;
  await rm(dir, { recursive: true, force: true });
});

const bytes = (lines: string[]) => lines.reduce((sum, l) => sum + Buffer.byteLength(l), 0);

describe('logs bounded by bytes', () => {
  it("keeps a failing call's log bounded when the hook's source map names its sources at any length", async () => {
    const client = new Hearth({ url: node.url });
    const before = nodeLines.length;
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${node.url}/fn/named`, {
        method: 'POST',
        body: '{}',
        headers: { 'content-type': 'application/json', 'x-request-id': `named-${i}` },
      });
      expect(r.status).toBe(500);
      expect(((await r.json()) as { code: string }).code).toBe('HOOK_FAILED');
    }
    const entries = await waitFor(
      'the three failures in the function log',
      () => client.logs('named'),
      (es) => es.filter((e) => e.source === 'error').length === 3,
      { intervalMs: 50 },
    );
    const errors = entries.filter((e) => e.source === 'error');
    // Each says where it failed, in the hook's (mapped, cut) source name.
    for (const e of errors) expect(e.msg).toMatch(/deep\n {4}at recurse \(s+…/);
    // Three failures: a few KiB each, not megabytes, in the function's log and the node's (its
    // line of each failure's detail, under the request's id).
    const logged = await waitFor(
      "the three failures in the node's log",
      () => nodeLines.slice(before),
      (ls) => [0, 1, 2].every((i) => ls.some((l) => l.includes(`"requestId":"named-${i}"`))),
      { intervalMs: 50 },
    );
    expect(bytes(logged)).toBeLessThanOrEqual(3 * 16 * 1024);
    expect(bytes(errors.map((e) => e.msg))).toBeLessThanOrEqual(3 * 8192);
  });

  it("stops a runner with a hook without an isolated-vm assertion in the function's log", async () => {
    const client = new Hearth({ url: node.url });
    expect((await fetch(`${node.url}/v2/repository/models/named/unload`, { method: 'POST' })).status).toBe(200);
    const entries = await waitFor(
      'the pool to stop',
      () => client.logs('named'),
      (es) => es.some((e) => e.source === 'lifecycle' && e.msg === 'stopped'),
      { intervalMs: 50 },
    );
    expect(entries.filter((e) => /Assertion|environment != nullptr/.test(e.msg))).toEqual([]);
    expect(nodeLines.filter((l) => /Assertion|environment != nullptr/.test(l))).toEqual([]);
  });
});
