/** The runner process itself: its pool, served to the node on the channel (serve.ts). */
export { serveRunner } from './serve.js';
