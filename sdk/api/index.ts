export * from './schemas.js';
export { invalidBody, parseBody } from './parse.js';
export * from './canary-text.js';
