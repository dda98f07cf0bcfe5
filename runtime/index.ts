/** Hearth's data plane for one node. */
export * from './engine/index.js';
