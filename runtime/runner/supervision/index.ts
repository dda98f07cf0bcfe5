/**
 * The node's side of its runners: it starts them in their sandbox and keeps a spare (runner-host.ts),
 * serves a function version through one as a pool (runner-pool.ts) and restarts it when it dies or
 * hangs, each runner's process, channel and exit (runner-process.ts), and one call to it (runner-call.ts).
 */
export { groupOf, RunnerHost, runnerEntryFile } from './runner-host.js';
export type { RunnerHostOptions, SandboxReport } from './runner-host.js';
export { RunnerPool } from './runner-pool.js';
export type { RunnerCrash, RunnerPoolOptions } from './runner-pool.js';
