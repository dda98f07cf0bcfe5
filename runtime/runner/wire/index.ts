/**
 * The wire between a node and its runners, used by both ends: the typed protocol (protocol.ts),
 * its frames on one socket (channel.ts) with their blobs in a shared-memory arena (arena.ts), the
 * node's gathering of hook-less requests into one call (gather.ts), the runner's snapshots of its
 * pool (snapshots.ts), and the budget of a runner's log lines (line-limiter.ts).
 */
export { arenaCapBytes, DEFAULT_ARENA_MB, nodeEnd, runnerEnd } from './arena.js';
export type { Frame, OutBlob } from './channel.js';
export { Channel } from './channel.js';
export type { Target } from './gather.js';
export { Gatherer } from './gather.js';
export { LineLimiter, limitedLines } from './line-limiter.js';
export type {
  Asked,
  CallFields,
  Failed,
  FromRunner,
  Notice,
  Reply,
  ReplyFrame,
  Request,
  RunnerReply,
  Snapshot,
  StartMessage,
  Succeeded,
  ToRunner,
} from './protocol.js';
export {
  decodeFromRunner,
  decodeToRunner,
  packCall,
  packError,
  packTensors,
  readReply,
  unpackCall,
  unpackError,
  unpackTensors,
} from './protocol.js';
export { SnapshotSender } from './snapshots.js';
