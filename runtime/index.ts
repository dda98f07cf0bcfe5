/** Hearth's data plane for one node: the engine, the batcher, hook threads and pools. */
export * from './engine/index.js';
export * from './batcher/index.js';
export * from './hooks/index.js';
export * from './pool/index.js';
export * from './runner/index.js';
export { checkTensors, batchSignature } from './tensors/index.js';
