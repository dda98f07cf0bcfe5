/**
 * Each function's own log on a real node (runner processes, hooks in their sandbox): a hook's
 * console lines, labelled by function, version and level, within 2 s; its lifecycle; the detail of
 * a model's error its caller was not shown, under the request's id; and the same followed live as
 * server-sent events.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../platform/node/index.js';
import type { FunctionLogEntry } from '../../sdk/api/index.js';
import { Hearth } from '../../sdk/client.js';
import { deployFixture, testNode } from '../helpers/node.js';
import { SMALL_SPEC } from '../helpers/specs.js';
import { waitFor } from '../helpers/wait.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-fn-logs-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const call = (url: string, fn: string, body: unknown, requestId: string) =>
  fetch(`${url}/fn/${fn}`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', 'x-request-id': requestId },
  });

describe("a function's own log", () => {
  let node: HearthNode;
  let client: Hearth;
  beforeAll(async () => {
    node = await testNode(join(dir, 'node'));
    client = new Hearth({ url: node.httpUrl });
    const hooked = { ...SMALL_SPEC, name: 'chatty', hook: 'hook.ts' };
    expect((await deployFixture(node.httpUrl, hooked, { model: 'small', hook: 'chatty' })).status).toBe(201);
    const fails = { ...SMALL_SPEC, name: 'fails', outputs: [{ name: 'y', dtype: 'FP32', dims: [4] }] };
    expect((await deployFixture(node.httpUrl, fails, { model: 'fails' })).status).toBe(201);
  });
  afterAll(() => node?.close());

  it("holds the hook's console lines with their level, and the version's lifecycle", async () => {
    expect((await call(node.httpUrl, 'chatty', { x: [[1, 2, 3, 4]], tag: 'first' }, 'r-1')).status).toBe(200);
    const entries = await waitFor(
      'the hook line',
      () => client.logs('chatty'),
      (es) => es.some((e) => e.msg === 'pre saw tag first'),
      { intervalMs: 20 },
    );
    expect(entries.find((e) => e.msg === 'pre saw tag first')).toMatchObject({
      function: 'chatty',
      version: 1,
      source: 'hook',
      level: 'info',
    });
    expect(entries.find((e) => e.msg === 'a warning from the hook')?.level).toBe('warn');
    const lifecycle = entries.filter((e) => e.source === 'lifecycle').map((e) => e.msg);
    expect(lifecycle).toContain('loading');
    expect(lifecycle).toContain('warm');
    // Another function's log holds none of it.
    expect((await client.logs('fails')).some((e) => e.msg.includes('tag first'))).toBe(false);
  });

  it("keeps the traceback its caller was not shown, under the request's id", async () => {
    const r = await call(node.httpUrl, 'fails', { inputs: { x: [[-1, -2, -3, -4]] } }, 'r-fails');
    expect(r.status).toBe(500);
    expect(((await r.json()) as { error: string }).error).not.toMatch(/\n/);
    const entries = await client.logs('fails');
    const detail = entries.find((e) => e.requestId === 'r-fails');
    expect(detail).toMatchObject({ source: 'error', level: 'error' });
    expect(detail?.msg).toMatch(/negative input is not allowed\n[\s\S]*Traceback/);
  });

  it('follows new lines through the SDK', async () => {
    const stop = new AbortController();
    const seen: FunctionLogEntry[] = [];
    const following = (async () => {
      for await (const e of client.followLogs('chatty', { limit: 1, signal: stop.signal })) {
        seen.push(e);
        if (e.msg === 'pre saw tag sdk') stop.abort();
      }
    })();
    expect((await call(node.httpUrl, 'chatty', { x: [[1, 2, 3, 4]], tag: 'sdk' }, 'r-3')).status).toBe(200);
    await Promise.race([
      following,
      new Promise((_, reject) => setTimeout(() => reject(new Error('no entry in 2 s')), 2000)),
    ]);
    expect(seen.find((e) => e.msg === 'pre saw tag sdk')).toMatchObject({ source: 'hook', function: 'chatty' });
  });

  it('follows new lines as server-sent events', async () => {
    const controller = new AbortController();
    const stream = await fetch(`${node.httpUrl}/api/v1/functions/chatty/logs?follow=1&limit=1`, {
      signal: controller.signal,
    });
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = stream.body!.getReader();
    const seen: FunctionLogEntry[] = [];
    const decoder = new TextDecoder();
    let text = '';
    const reading = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        text += decoder.decode(value, { stream: true });
        for (const m of text.matchAll(/^data: (.*)$/gm)) seen.push(JSON.parse(m[1]!) as FunctionLogEntry);
        text = text.slice(text.lastIndexOf('\n') + 1);
        if (seen.some((e) => e.msg === 'pre saw tag live')) return;
      }
    })();
    expect((await call(node.httpUrl, 'chatty', { x: [[1, 2, 3, 4]], tag: 'live' }, 'r-2')).status).toBe(200);
    await Promise.race([
      reading,
      new Promise((_, reject) => setTimeout(() => reject(new Error('no event in 2 s')), 2000)),
    ]);
    controller.abort();
    expect(seen.find((e) => e.msg === 'pre saw tag live')).toMatchObject({ source: 'hook', function: 'chatty' });
  });
});
