/**
 * What a starting node waits for before it says it is ready: the functions that keep instances warm
 * (scaling.minInstances ≥ 1), and under HEARTH_SANDBOX=strict its spare runner's report (for at most
 * SPARE_WAIT_MS: strict refuses to start without every layer). Otherwise it serves as soon as its
 * stores answer: its spare, forked from the runner template, comes up beside the first requests (a
 * cold start takes it when it is up, holding its requests meanwhile).
 */
import { setTimeout as sleep } from 'node:timers/promises';

import type { RunnerHost, SandboxReport } from '../../runtime/index.js';
import type { Config } from '../config/index.js';
import type { FunctionService } from '../functions/index.js';
import type { Logger } from '../log/index.js';

/** The longest a starting node waits for its spare runner before it reports ready. */
const SPARE_WAIT_MS = 30_000;

export interface WarmedAtStart {
  warm: string[];
  failed: string[];
}

async function waitForSpare(spareUp: Promise<void>, log: Logger): Promise<void> {
  const timedOut = await Promise.race([spareUp.then(() => false), sleep(SPARE_WAIT_MS, true, { ref: false })]);
  if (timedOut)
    log.warn(
      { waitedMs: SPARE_WAIT_MS },
      'no spare runner yet; ready without one (the first cold start starts its own)',
    );
}

/** Which layers of the kernel's jail the runners have (the spare's report), or why not. */
function reportSandbox(runners: RunnerHost, sandboxMode: Config['sandbox'], log: Logger): void {
  const sandbox = runners.sandbox;
  if (!sandbox && sandboxMode === 'strict')
    throw new Error(
      `HEARTH_SANDBOX=strict: no runner could start in its jail: ${runners.spareError ?? 'the spare runner did not start in time'}`,
    );
  const report = (s: SandboxReport) => {
    if (s.notes.length) log.warn({ sandbox: s.summary, missing: s.notes }, 'runners are jailed without every layer');
    else log.info({ sandbox: s.summary }, 'runners are jailed');
  };
  // A spare late on a loaded machine: the first runner to start says it.
  if (sandbox) report(sandbox);
  else void runners.reported.then(report);
}

export async function warmUp(
  config: Config,
  service: FunctionService,
  runners: RunnerHost | undefined,
  spareUp: Promise<void> | undefined,
  log: Logger,
): Promise<WarmedAtStart> {
  // Readiness waits for the functions that keep instances warm (scaling.minInstances ≥ 1).
  const minimum = service.warmMinimum().catch((error: unknown) => {
    log.warn({ reason: (error as Error).message }, 'could not list the functions to warm at start');
    return { warm: [], failed: [] };
  });
  if (spareUp && config.sandbox === 'strict') await waitForSpare(spareUp, log);
  if (runners && config.sandbox !== 'off') reportSandbox(runners, config.sandbox, log);
  return await minimum;
}
