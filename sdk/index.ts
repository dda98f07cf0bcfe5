/**
 * Hearth's public contract: tensor types, errors, the function spec and (as they land) the hook
 * types and the typed client. Nothing here depends on platform/ or runtime/.
 */

export * from './api/index.js';
export * from './bench/index.js';
export * from './client.js';
export * from './errors.js';
export * from './event-stream.js';
export * from './hook.js';
export * from './kserve-binary.js';
export * from './spec/index.js';
export * from './tensor.js';
export * from './tensor-json.js';
