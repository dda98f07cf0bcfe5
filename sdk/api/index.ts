export * from './canary-text.js';
export { invalidBody, parseBody } from './parse.js';
export * from './schemas.js';
