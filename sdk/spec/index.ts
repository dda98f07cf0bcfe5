/** The function spec: schema, parsing, JSON Schema, and the Triton model-folder import. */
export * from './function-spec.js';
export { functionSpecJsonSchema } from './json-schema.js';
export * from './parse.js';
export * from './triton/index.js';
export { functionOfKey, versionKey } from './version-key.js';
