/**
 * Nothing acknowledged is lost on the embedded default: a node process killed (SIGKILL, a crash)
 * with jobs done, one running and one waiting behind it in its pool's queue, restarted on the same
 * data dir, lists every job it answered 202 for, keeps the finished one's result, and runs the two
 * unfinished ones to their answers (python3-torch's, for the small model).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, expect, it } from 'vitest';

import { modelPath } from '../../helpers/fixtures.js';
import { deployFixture, spawnNode, upload } from '../../helpers/node.js';
import { maxAbsDiff } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';
import { deploySlow, untilSlowPool } from '../../helpers/slow.js';
import { SLOW_SPEC, SMALL_SPEC, SMALL_X } from '../../helpers/specs.js';
import { waitFor } from '../../helpers/wait.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-jobs-restart-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

interface JobView {
  id: string;
  status: string;
  attempts: number;
  result?: { json?: { outputs: Record<string, number[][] | number[][][]> } };
}

const submit = async (url: string, fn: string, inputs: object): Promise<string> => {
  const r = await fetch(`${url}/fn/${fn}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', prefer: 'respond-async' },
    body: JSON.stringify({ inputs }),
  });
  expect(r.status).toBe(202);
  return ((await r.json()) as { id: string }).id;
};
const job = async (url: string, id: string): Promise<JobView> =>
  (await (await fetch(`${url}/api/v1/jobs/${id}`)).json()) as JobView;

it('keeps the jobs of an embedded node across a crash: done ones listed, unfinished ones run again', async () => {
  const data = join(dir, 'data');
  const first = await spawnNode(data);
  let url = first.url;
  const slowInputs = { x: Array.from({ length: 4 }, () => new Array(512).fill(0.01)), n: 20_000 };
  let ids: { done: string; running: string; waiting: string };
  try {
    expect((await deployFixture(url, SMALL_SPEC, { model: 'small' })).status).toBe(201);
    const slowModel = await upload(url, new Uint8Array(await readFile(modelPath('slow'))));
    expect((await deploySlow(url, SLOW_SPEC, slowModel)).status).toBe(201);
    const done = await submit(url, 'small', { x: SMALL_X });
    await waitFor(
      'the small job',
      () => job(url, done),
      (j) => j.status === 'succeeded',
    );
    const running = await submit(url, 'slow', slowInputs);
    await untilSlowPool(url, (p) => p.instances.busy === 1);
    const waiting = await submit(url, 'slow', slowInputs);
    await untilSlowPool(url, (p) => p.instances.busy === 1 && p.queueDepth === 1);
    ids = { done, running, waiting };
  } finally {
    first.child.kill('SIGKILL');
    await first.exited;
  }

  const second = await spawnNode(data);
  url = second.url;
  try {
    const listed = (await (await fetch(`${url}/api/v1/jobs`)).json()) as { jobs: { id: string }[] };
    expect(listed.jobs.map((j) => j.id).sort()).toEqual(Object.values(ids).sort());
    const done = await job(url, ids.done);
    expect(done.status).toBe('succeeded');
    const reference = pythonForward(modelPath('small'), [
      { dtype: 'FP32', shape: [2, 4], data: Float32Array.from(SMALL_X.flat()) },
    ]).outputs[0]!.data as Float32Array;
    expect(maxAbsDiff(Float32Array.from((done.result!.json!.outputs.y as number[][]).flat()), reference)).toBeLessThan(
      1e-6,
    );
    for (const id of [ids.running, ids.waiting]) {
      const finished = await waitFor(
        'an unfinished job, run again',
        () => job(url, id),
        (j) => j.status === 'succeeded',
        {
          timeoutMs: 120_000,
        },
      );
      // Started once before the crash, once after.
      expect(finished.attempts).toBe(2);
      const y = finished.result!.json!.outputs.y as number[][];
      expect([y.length, y[0]!.length]).toEqual([4, 512]);
    }
  } finally {
    second.child.kill('SIGTERM');
    await second.exited;
  }
}, 240_000);
