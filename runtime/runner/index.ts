export { DEFAULT_ARENA_MB } from './arena.js';
export { RunnerHost, groupOf, runnerEntryFile } from './runner-host.js';
export type { RunnerHostOptions, SandboxReport } from './runner-host.js';
export { RunnerPool } from './runner-pool.js';
export type { RunnerCrash, RunnerPoolOptions } from './runner-pool.js';
