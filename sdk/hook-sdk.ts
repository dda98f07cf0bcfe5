/**
 * What a hook imports as `@hearth/sdk`: tensors, JSON conversion, the hook contract and errors. Kept
 * free of the spec's dependencies (zod, yaml, fs), so a bundled hook stays small.
 */

export * from './errors.js';
export * from './hook.js';
export * from './image.js';
export * from './tensor.js';
export * from './tensor-json.js';
