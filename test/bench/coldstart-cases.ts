/**
 * bench:coldstart's issue-44 cases, each against a reference measured in the same run:
 *   runner_ready: a jailed runner, spawn to its hello, forked from the runner template and exec'd
 *     (RunnerHost, no spare), medians;
 *   restart: a node process restarted (empty cache, functions in Redis and S3), one request as soon
 *     as its port answers, for ResNet-50 and the MLP, against a fresh python3-torch process's load
 *     and forward of the same file;
 *   burst: four functions cold at once (two ResNet-50, two MLP) on a node just started and ready,
 *     its spare up, against the slowest raw load+forward (ResNet-50 in python3-torch).
 */
import { readFile } from 'node:fs/promises';

import { RunnerHost } from '../../runtime/index.js';
import { buildNode } from '../../tools/build-node.js';
import { modelPath } from '../helpers/fixtures.js';
import { postFunction, upload } from '../helpers/node.js';
import type { ColdModel } from './coldstart-restart.js';
import { burst, pythonLoadForward, restartToAnswer } from './coldstart-restart.js';
import { median, round } from './flags.js';

const RESNET: ColdModel = { name: 'resnet50', file: modelPath('resnet50'), shape: [3, 224, 224] };
const MLP: ColdModel = { name: 'mlp', file: modelPath('mlp'), shape: [1024] };
const spec = (m: ColdModel, name = m.name) => ({
  name,
  model: 'model.pt',
  maxBatchSize: 8,
  instances: { device: 'cpu' },
  inputs: [{ name: 'x', dtype: 'FP32', dims: m.shape }],
  outputs: [{ name: 'y', dtype: 'FP32', dims: [m.file === RESNET.file ? 1000 : 1024] }],
});
const BURST = [
  { ...RESNET, name: 'burst-resnet-a' },
  { ...RESNET, name: 'burst-resnet-b' },
  { ...MLP, name: 'burst-mlp-a' },
  { ...MLP, name: 'burst-mlp-b' },
];

/** Deploys the cases' functions through a running node (ResNet-50 is there already). */
export async function deployCases(url: string): Promise<void> {
  const shas = new Map<ColdModel['file'], string>();
  for (const m of [RESNET, MLP]) shas.set(m.file, await upload(url, new Uint8Array(await readFile(m.file))));
  for (const [m, name] of [[MLP, 'mlp'], ...BURST.map((b) => [b, b.name] as const)] as const) {
    const r = await postFunction(url, { spec: spec(m, name), artifacts: { model: shas.get(m.file)! } });
    if (r.status !== 201) throw new Error(`deploy ${name}: ${r.status} ${await r.text()}`);
  }
}

/** Spawn to hello of `n` jailed runners, forked (the template's start not counted) or exec'd. */
async function runnerReady(template: boolean, n: number): Promise<number[]> {
  const host = new RunnerHost({ spare: false, template });
  const times: number[] = [];
  try {
    // The template's own start (once per node) is not a runner's: the first runner waits it out.
    (await host.take('ready@0')).kill();
    for (let i = 0; i < n; i++) {
      const runner = await host.take(`ready@${i + 1}`);
      times.push(runner.start.upAt! - runner.start.at);
      runner.kill();
    }
  } finally {
    await host.close();
  }
  return times;
}

export async function issue44Cases(
  rounds: number,
  nodeEnv: (name: string) => Record<string, string>,
): Promise<Record<string, unknown>> {
  await buildNode();
  const forked = await runnerReady(true, 2 * rounds + 1);
  const execd = await runnerReady(false, 2 * rounds + 1);
  console.log(
    `runner ready (jailed, spawn → hello): forked ${round(median(forked))} ms, exec'd ${round(median(execd))} ms (target ≤ 200 ms)`,
  );
  const restart: Record<
    string,
    { python: number[]; portLive: number[]; answer: number[]; total: number[]; phases: object[] }
  > = {};
  const bursts: { answers: number[]; python: number }[] = [];
  for (let i = 0; i < rounds; i++) {
    for (const m of [RESNET, MLP]) {
      restart[m.name] ??= { python: [], portLive: [], answer: [], total: [], phases: [] };
      const r = restart[m.name]!;
      r.python.push(await pythonLoadForward(m));
      const t = await restartToAnswer(nodeEnv(`restart-${m.name}-${i}`), m);
      r.portLive.push(t.portLive);
      r.answer.push(t.answer);
      r.total.push(t.total);
      r.phases.push({ node: t.nodeStart, coldStart: t.coldStart });
      console.log(`    node start ${JSON.stringify(t.nodeStart)}; cold start ${JSON.stringify(t.coldStart)}`);
      console.log(
        `  restart ${m.name} round ${i + 1}: port live ${round(t.portLive)} ms, then the answer ${round(t.answer)} ms (spawn → answer ${round(t.total)} ms); python3-torch load+forward ${round(r.python.at(-1)!)} ms`,
      );
    }
    const python = await pythonLoadForward(RESNET);
    const answers = await burst(nodeEnv(`burst-${i}`), BURST, 3000);
    bursts.push({ answers, python });
    console.log(
      `  burst round ${i + 1}: answers ${answers.map((a) => round(a)).join(', ')} ms; python3-torch ResNet-50 load+forward ${round(python)} ms`,
    );
  }
  const summary = Object.fromEntries(
    Object.entries(restart).map(([name, r]) => {
      const [python, answer, total] = [median(r.python), median(r.answer), median(r.total)];
      return [
        name,
        {
          python_ms: round(python),
          port_live_ms: round(median(r.portLive)),
          answer_after_port_ms: round(answer),
          spawn_to_answer_ms: round(total),
          ratio_after_port: round(answer / python, 3),
          ratio_from_spawn: round(total / python, 3),
          rounds: r,
        },
      ];
    }),
  );
  const lastAnswer = median(bursts.map((b) => Math.max(...b.answers)));
  const slowest = median(bursts.map((b) => b.python));
  for (const [name, s] of Object.entries(summary))
    console.log(
      `restart ${name}: port live → answer ${s.answer_after_port_ms} ms ÷ python3-torch ${s.python_ms} ms = ${s.ratio_after_port} (target ≤ 1.3); spawn → answer ${s.spawn_to_answer_ms} ms = ${s.ratio_from_spawn}`,
    );
  console.log(
    `burst of 4: last answer ${round(lastAnswer)} ms ÷ the slowest raw load+forward (ResNet-50, python3-torch) ${round(slowest)} ms = ${round(lastAnswer / slowest, 3)} (target ≤ 2)`,
  );
  return {
    runner_ready: { forked_ms: round(median(forked)), exec_ms: round(median(execd)), forked, exec: execd },
    restart: summary,
    burst: {
      last_answer_ms: round(lastAnswer),
      slowest_raw_ms: round(slowest),
      ratio: round(lastAnswer / slowest, 3),
      rounds: bursts,
    },
  };
}
