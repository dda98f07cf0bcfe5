export { DynamicBatcher } from './dynamic-batcher.js';
export type { BatcherOptions, BatchEntry, Dispatch, EnqueueOptions } from './dynamic-batcher.js';
export { ManualClock, systemClock } from './clock.js';
export type { Clock } from './clock.js';
export { SequenceRouter, sequenceKey } from './sequence-router.js';
export type { SequenceFlags, SequenceOptions, SequenceRow } from './sequence-router.js';
