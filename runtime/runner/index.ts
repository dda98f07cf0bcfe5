/**
 * Runner processes: a function version served from a process of its own, in the kernel's walls, as
 * the rest of the runtime and the platform use them. Inside, by concern: supervision/ (the node's
 * side: start, serve, restart), walls/ (the jail and cgroups), wire/ (the protocol, channel and
 * arena between the two ends) and child/ (the runner process itself; runner-main.ts is its entry).
 */

export { growHeapsFurther, HEAP_GROWTH_FLAG } from './heap-growth.js';
export type { RunnerCrash, RunnerHostOptions, RunnerPoolOptions, SandboxReport } from './supervision/index.js';
export {
  discardEarlyTemplate,
  groupOf,
  RunnerHost,
  RunnerPool,
  runnerEntryFile,
  startTemplateEarly,
} from './supervision/index.js';
export { DEFAULT_ARENA_MB, limitedLines } from './wire/index.js';
