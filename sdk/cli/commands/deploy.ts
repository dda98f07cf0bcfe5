import { relative } from 'node:path';

import type { Command } from 'commander';

import type { CliContext } from '../context.js';
import { ModelLoadError } from '../../errors.js';
import { deployFolder, modelFolders } from '../deploy.js';

/** `hearth deploy` */
export function register(program: Command, { client, json, print, integer }: CliContext): void {
  program
    .command('deploy <dir>')
    .description(
      'validate, bundle the hook, upload what the node lacks, create a version, print its URL (a Triton model folder works too, and a repository root of them)',
    )
    .option('--keep-traffic', 'create the version without moving traffic to it')
    .option('--wait', 'wait until the version is warm on the node')
    .option('--no-typecheck', "deploy the hook without type-checking it against the SDK's declarations")
    .option(
      '--device <device>',
      'run on this device whatever the spec says: cpu (a GPU config on a CPU node), cuda, cuda:N, auto',
    )
    .option('--instances <n>', 'instances started with the pool (spec instances.count)', integer('--instances'))
    .option('--threads <n>', 'LibTorch intra-op threads per forward (spec instances.threads)', integer('--threads'))
    .option('--min <n>', 'instances kept while idle, 0 scales to zero (spec scaling.minInstances)', integer('--min'))
    .option('--max <n>', "the autoscaler's ceiling (spec scaling.maxInstances)", integer('--max'))
    .option(
      '--queue-size <n>',
      'requests waiting for the batcher at most (spec batching.maxQueueSize)',
      integer('--queue-size'),
    )
    .option(
      '--hook-queue-size <n>',
      'requests waiting for a hook thread at most (spec limits.hookQueueSize)',
      integer('--hook-queue-size'),
    )
    .option(
      '--hook-timeout-ms <ms>',
      'limit of one hook call (spec limits.hookTimeoutMs, default 10000)',
      integer('--hook-timeout-ms'),
    )
    .option(
      '--hook-memory-mb <mb>',
      'memory of each hook (spec limits.hookMemoryMb, default 256)',
      integer('--hook-memory-mb'),
    )
    .option(
      '--runner-memory-mb <mb>',
      "resident memory of the function's runner process (spec limits.runnerMemoryMb, default 8192)",
      integer('--runner-memory-mb'),
    )
    .option(
      '--forward-timeout-ms <ms>',
      'a forward past this is a hang: the runner restarts (spec limits.forwardTimeoutMs, default 60000)',
      integer('--forward-timeout-ms'),
    )
    .addHelpText(
      'after',
      '\nExamples:\n  hearth deploy my-model --wait\n  hearth deploy my-model --keep-traffic            # a canary: then hearth traffic my-model 1=90 2=10\n  hearth deploy my-model --device cpu --instances 2 --max 4 --forward-timeout-ms 5000\n  hearth deploy model_repository                  # every model folder of a Triton repository',
    )
    .action(
      async (
        dir: string,
        o: {
          keepTraffic?: boolean;
          wait?: boolean;
          typecheck: boolean;
          device?: string;
          instances?: number;
          threads?: number;
          min?: number;
          max?: number;
          queueSize?: number;
          hookQueueSize?: number;
          hookTimeoutMs?: number;
          hookMemoryMb?: number;
          runnerMemoryMb?: number;
          forwardTimeoutMs?: number;
        },
      ) => {
        const hearth = client();
        const deploy = async (folder: string) => {
          const r = await deployFolder(hearth, folder, {
            keepTraffic: o.keepTraffic,
            typecheck: o.typecheck,
            device: o.device,
            overrides: {
              limits: {
                hookQueueSize: o.hookQueueSize,
                hookTimeoutMs: o.hookTimeoutMs,
                hookMemoryMb: o.hookMemoryMb,
                runnerMemoryMb: o.runnerMemoryMb,
                forwardTimeoutMs: o.forwardTimeoutMs,
              },
              instances: { count: o.instances, threads: o.threads },
              scaling: { minInstances: o.min, maxInstances: o.max },
              batching: { maxQueueSize: o.queueSize },
            },
            progress: !json() && process.stderr.isTTY,
          });
          if (!json()) for (const note of r.notes) process.stderr.write(`note: ${note}\n`);
          if (r.status === 'failed')
            throw new ModelLoadError(
              `${r.name} v${r.version} failed to load: ${r.reason} (the whole error: hearth logs ${r.name} --version ${r.version})`,
            );
          if (o.wait) {
            for (let i = 0; i < 600; i++) {
              const pools = (await hearth.describe(r.name)).pools;
              if (pools.some((p) => p.version === r.version && p.state === 'warm')) break;
              await new Promise((res) => setTimeout(res, 200));
            }
          }
          return { ...r, url: `${hearth.url}${r.url}` };
        };
        const line = (r: Awaited<ReturnType<typeof deploy>>) =>
          `${r.name} v${r.version} ${r.status}${r.status === 'pending' && r.reason ? `: ${r.reason}` : ''}${r.uploaded.model ? '' : ' (model unchanged, not uploaded)'}`;

        // A Triton repository root (model folders inside): each folder deployed, a line each, a summary.
        const folders = await modelFolders(dir);
        if (!folders) {
          const r = await deploy(dir);
          print(r, () => `${line(r)}\n${r.url}`);
          return;
        }
        const results: ({ folder: string } & ({ deployed: Awaited<ReturnType<typeof deploy>> } | { error: string }))[] =
          [];
        for (const folder of folders) {
          const shown = relative(dir, folder);
          try {
            const r = await deploy(folder);
            results.push({ folder: shown, deployed: r });
            if (!json()) process.stderr.write(`✓ ${shown}: ${line(r)} ${r.url}\n`);
          } catch (error) {
            results.push({ folder: shown, error: (error as Error).message });
            if (!json()) process.stderr.write(`✗ ${shown}: ${(error as Error).message}\n`);
          }
        }
        const failed = results.filter((r) => 'error' in r).length;
        if (failed > 0) process.exitCode = 1;
        print(
          results,
          () =>
            `deployed ${results.length - failed} of ${results.length} model folders from ${dir}${failed ? ` (${failed} failed)` : ''}`,
        );
      },
    );
}
