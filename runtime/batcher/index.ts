export type { Clock } from './clock.js';
export { ManualClock, systemClock } from './clock.js';
export type { BatchEntry, BatcherOptions, Dispatch, EnqueueOptions } from './dynamic-batcher.js';
export { DynamicBatcher } from './dynamic-batcher.js';
export type { SequenceFlags, SequenceOptions, SequenceRow } from './sequence-router.js';
export { SequenceRouter, sequenceKey } from './sequence-router.js';
