// Entry of a hook worker thread (piscina's filename); the work is in ./worker.ts.
import { workerData } from 'node:worker_threads';

import type { HookWorkerData } from './messages.js';
import { createHookWorker } from './worker.js';

export default createHookWorker(workerData as HookWorkerData);
