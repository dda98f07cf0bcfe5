/**
 * The embedded queue's folder, opened again as a node that died would open it: a job accepted and
 * never finished runs again, each opening counting a try; one the node keeps dying on is failed
 * once its attempts are spent, not run forever. A finished job is read back with its result.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, expect, it } from 'vitest';

import type { Invoker } from '../jobs.js';
import { DEFAULT_JOB_OPTIONS } from '../jobs.js';
import { FsJobQueue } from './fs-job-queue.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-job-folder-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

/** An invoke that never answers: the node "dies" with the job running. */
const hangs: Invoker = () => new Promise(() => {});
const request = { function: 'f', body: new TextEncoder().encode('{"x": 1}'), contentType: 'application/json' };
/** Until the record on disk says `attempts` (its writes are not awaited by the queue's callers). */
async function written(folder: string, id: string, check: (r: { attempts: number; status: string }) => boolean) {
  for (let i = 0; i < 500; i++) {
    const text = await readFile(join(folder, `${id}.json`), 'utf8').catch(() => '');
    if (text && check(JSON.parse(text))) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`the record of ${id} was not written`);
}

it('runs an unfinished job again on each opening, and fails it once the node died on it `attempts` times', async () => {
  const folder = join(dir, 'poison');
  const first = new FsJobQueue(hangs, { ...DEFAULT_JOB_OPTIONS, dir: folder });
  const { record } = await first.submit(request);
  // One file, on disk before submit returned.
  expect(await readdir(folder)).toEqual([`${record.id}.job`]);
  let seen: { body: string; contentType: string }[] = [];
  const recording: Invoker = (_fn, _v, r) => {
    seen.push({ body: new TextDecoder().decode(r.body), contentType: r.contentType });
    return new Promise(() => {});
  };
  for (const tries of [2, 3]) {
    seen = [];
    const again = new FsJobQueue(recording, { ...DEFAULT_JOB_OPTIONS, dir: folder });
    expect(await again.get(record.id)).toMatchObject({ status: 'running', attempts: tries });
    expect(seen).toEqual([{ body: '{"x": 1}', contentType: 'application/json' }]);
    await written(folder, record.id, (r) => r.attempts === tries - 1);
  }
  // The third death: its three attempts are spent.
  seen = [];
  const last = new FsJobQueue(recording, { ...DEFAULT_JOB_OPTIONS, dir: folder });
  expect(await last.get(record.id)).toMatchObject({
    status: 'failed',
    error: { code: 'UNAVAILABLE', error: expect.stringMatching(/the node stopped while this job ran, 3 times/) },
  });
  expect(seen).toEqual([]);
  await written(folder, record.id, (r) => r.status === 'failed');
  expect(await readdir(folder)).toEqual([`${record.id}.json`]);
  // And it stays failed.
  expect(await new FsJobQueue(recording, { ...DEFAULT_JOB_OPTIONS, dir: folder }).get(record.id)).toMatchObject({
    status: 'failed',
  });
});

it('reads a finished job back with its result, its accepted file gone', async () => {
  const folder = join(dir, 'done');
  const answers: Invoker = async () => ({
    body: new TextEncoder().encode('{"y": 2}'),
    contentType: 'application/json',
    version: 1,
  });
  const queue = new FsJobQueue(answers, { ...DEFAULT_JOB_OPTIONS, dir: folder });
  const { record } = await queue.submit(request);
  await queue.close();
  expect(await readdir(folder)).toEqual([`${record.id}.json`]);
  const reopened = await new FsJobQueue(hangs, { ...DEFAULT_JOB_OPTIONS, dir: folder }).get(record.id);
  expect(reopened).toMatchObject({ status: 'succeeded', attempts: 1 });
  expect(new TextDecoder().decode(reopened!.result!.body)).toBe('{"y": 2}');
});
