/**
 * bench:jobs — async jobs on an embedded node (`npm start`: jobs written to its data dir before each
 * 202), against the same calls made synchronously on the same node in the same run: N calls at
 * concurrency C of the small model with the echo hook, `Prefer: respond-async` then polled until
 * every job is done, alternated with the same N as plain calls. Prints jobs/s, calls/s and
 * async ÷ sync; writes test/bench/results/jobs.json.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { REPO_ROOT } from '../helpers/fixtures.js';
import { deployFixture, spawnNode } from '../helpers/node.js';
import { SMALL_SPEC } from '../helpers/specs.js';
import { median, round } from './flags.js';

const { values: flags } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    calls: { type: 'string', default: '400' },
    concurrency: { type: 'string', default: '16' },
    out: { type: 'string', default: join(REPO_ROOT, 'test', 'bench', 'results', 'jobs.json') },
  },
});
const ROUNDS = Number(flags.rounds);
const N = Number(flags.calls);
const C = Number(flags.concurrency);
const BODY = JSON.stringify({ x: [[1, 2, 3, 4]] });

/** N calls, C at a time; each returns what to wait for afterwards (a job's status URL), if anything. */
async function drive(call: () => Promise<string | undefined>): Promise<{ sent: number; after: string[] }> {
  let next = 0;
  const after: string[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: C }, async () => {
      while (next < N) {
        next++;
        const u = await call();
        if (u) after.push(u);
      }
    }),
  );
  return { sent: performance.now() - t0, after };
}

const dir = await mkdtemp(join(tmpdir(), 'hearth-bench-jobs-'));
const node = await spawnNode(join(dir, 'data'));
try {
  const r = await deployFixture(
    node.url,
    { ...SMALL_SPEC, name: 'echo', hook: 'hook.ts' },
    { model: 'small', hook: 'echo' },
  );
  if (!r.ok) throw new Error(`deploy: ${r.status} ${await r.text()}`);
  const url = `${node.url}/fn/echo`;
  const sync = async () => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY });
    if (res.status !== 200) throw new Error(`call: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
    return undefined;
  };
  const submit = async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', prefer: 'respond-async' },
      body: BODY,
    });
    if (res.status !== 202) throw new Error(`submit: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { statusUrl: string }).statusUrl;
  };
  const asyncRound = async () => {
    const t0 = performance.now();
    const { sent, after } = await drive(submit);
    let pending = after;
    while (pending.length > 0) {
      const still: string[] = [];
      for (let i = 0; i < pending.length; i += C)
        await Promise.all(
          pending.slice(i, i + C).map(async (u) => {
            const job = (await (await fetch(`${node.url}${u}`)).json()) as { status: string };
            if (job.status === 'failed') throw new Error(`a job failed: ${JSON.stringify(job)}`);
            if (job.status !== 'succeeded') still.push(u);
          }),
        );
      pending = still;
      if (pending.length > 0) await new Promise((res) => setTimeout(res, 50));
    }
    return { acceptedPerS: N / (sent / 1000), donePerS: N / ((performance.now() - t0) / 1000) };
  };
  // Warm: the pool, the hook's isolate, the job folder.
  await drive(sync);
  await asyncRound();
  const rounds: { syncPerS: number; acceptedPerS: number; donePerS: number }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const s = await drive(sync);
    const a = await asyncRound();
    rounds.push({ syncPerS: N / (s.sent / 1000), ...a });
  }
  const result = {
    calls: N,
    concurrency: C,
    syncPerS: round(median(rounds.map((r) => r.syncPerS))),
    acceptedPerS: round(median(rounds.map((r) => r.acceptedPerS))),
    donePerS: round(median(rounds.map((r) => r.donePerS))),
    asyncOverSync: Number((median(rounds.map((r) => r.donePerS / r.syncPerS)) || 0).toFixed(3)),
    rounds: rounds.map((r) => ({
      syncPerS: round(r.syncPerS),
      acceptedPerS: round(r.acceptedPerS),
      donePerS: round(r.donePerS),
    })),
  };
  console.log(
    `embedded async jobs, ${N} calls at c=${C} (medians of ${ROUNDS} rounds):\n` +
      `  sync calls:     ${result.syncPerS} /s\n` +
      `  jobs accepted:  ${result.acceptedPerS} /s (each written to the data dir before its 202)\n` +
      `  jobs done:      ${result.donePerS} /s\n` +
      `  async ÷ sync:   ${result.asyncOverSync}`,
  );
  await mkdir(join(REPO_ROOT, 'test', 'bench', 'results'), { recursive: true });
  await writeFile(flags.out, `${JSON.stringify(result, null, 2)}\n`);
} finally {
  node.child.kill('SIGTERM');
  await node.exited;
  await rm(dir, { recursive: true, force: true });
}
