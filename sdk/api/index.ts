export * from './schemas.js';
export { parseBody } from './parse.js';
