/**
 * The node's side of its runners. The host (runner-host.ts) starts them in their sandbox — the
 * command line (runner-command.ts), what the jail reported (sandbox-record.ts) — keeps a spare, and
 * keeps a stopped version's runner for its next cold start (parked-runners.ts). A runner pool
 * (runner-pool.ts) serves a function version through one, its calls (runner-call.ts), and restarts
 * it when it dies or hangs (crash-loop.ts). Each runner's process, channel, output and exit:
 * runner-process.ts, runner-output.ts.
 */
export type { RunnerCrash } from './crash-loop.js';
export type { RunnerHostOptions } from './runner-host.js';
export { RunnerHost, runnerEntryFile } from './runner-host.js';
export { groupOf } from './runner-os.js';
export type { RunnerPoolOptions } from './runner-pool.js';
export { RunnerPool } from './runner-pool.js';
export { discardEarlyTemplate, startTemplateEarly } from './runner-template.js';
export type { SandboxReport } from './sandbox-record.js';
