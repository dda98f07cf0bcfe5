/**
 * Hearth's public contract: tensor types, errors, and (as they land) the function spec, hook types
 * and the typed client. Nothing here depends on platform/ or runtime/.
 */
export * from './tensor.js';
export * from './errors.js';
