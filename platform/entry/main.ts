/** `npm start`: a Hearth node configured from the environment (./node-main.ts); SIGTERM or SIGINT drains it. */
import { preloadAddon } from '../../runtime/engine/index.js';
import { growHeapsFurther, startTemplateEarly } from '../../runtime/runner/index.js';

// The runner template loads LibTorch (~0.7 s here) while the node's own modules load, not after;
// so does the node's own addon, on a thread of its own.
growHeapsFurther();
startTemplateEarly();
preloadAddon();
await import('./node-main.js');
