export * from './schemas.js';
export { invalidBody, parseBody } from './parse.js';
