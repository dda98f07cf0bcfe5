/**
 * What warm pools cost a node while no traffic comes (`npm run bench:idle`): the node process's CPU
 * (its own threads, and its runners' processes) over a window with no functions, the reference
 * measured in the same run, then over the same window with three warm pools of the small model
 * (a hook each, one instance each) and no requests. Writes test/bench/results/idle.json.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { REPO_ROOT } from '../helpers/fixtures.js';
import { deployFixture, spawnNode } from '../helpers/node.js';
import { SMALL_SPEC } from '../helpers/specs.js';
import { waitFor } from '../helpers/wait.js';
import { cpuOver } from './proc-cpu.js';

const WINDOW_S = Number(process.env.WINDOW_S ?? 20);
const POOLS = ['alpha', 'beta', 'gamma'];

const dir = await mkdtemp(join(tmpdir(), 'hearth-bench-idle-'));
const node = await spawnNode(join(dir, 'data'));
try {
  await new Promise((r) => setTimeout(r, 3000));
  const empty = await cpuOver(node.child.pid!, WINDOW_S);
  for (const name of POOLS) {
    const r = await deployFixture(
      node.url,
      { ...SMALL_SPEC, name, hook: 'hook.ts', scaling: { minInstances: 1 } },
      { model: 'small', hook: 'echo' },
    );
    if (!r.ok) throw new Error(`deploy ${name}: ${r.status} ${await r.text()}`);
  }
  // Warm, then settled: the loads' and warm-ups' work is over.
  await waitFor(
    'every pool warm',
    async () =>
      ((await (await fetch(`${node.url}/api/v1/pools`)).json()) as { pools: { function: string; state: string }[] })
        .pools,
    (pools) => POOLS.every((name) => pools.some((p) => p.function === name && p.state === 'warm')),
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  await new Promise((r) => setTimeout(r, 3000));
  const warm = await cpuOver(node.child.pid!, WINDOW_S);

  const result = {
    windowS: WINDOW_S,
    pools: POOLS.length,
    cpuPercentOfCore: {
      noFunctions: empty,
      threeWarmPools: warm,
      added: Number((warm.total - empty.total).toFixed(2)),
    },
  };
  console.log(
    `node CPU over ${WINDOW_S} s, % of a core (own + runners):\n` +
      `  no functions:     ${empty.own} + ${empty.children} = ${empty.total}\n` +
      `  ${POOLS.length} warm idle pools: ${warm.own} + ${warm.children} = ${warm.total}  (+${result.cpuPercentOfCore.added}, ${(result.cpuPercentOfCore.added / POOLS.length).toFixed(2)} a pool)`,
  );
  await mkdir(join(REPO_ROOT, 'test', 'bench', 'results'), { recursive: true });
  await writeFile(join(REPO_ROOT, 'test', 'bench', 'results', 'idle.json'), `${JSON.stringify(result, null, 2)}\n`);
} finally {
  node.child.kill('SIGTERM');
  await node.exited;
  await rm(dir, { recursive: true, force: true });
}
