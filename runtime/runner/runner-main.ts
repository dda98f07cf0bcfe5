/**
 * A runner process's entry (bundled by supervision/runner-host.ts runnerEntryFile, or prebuilt for
 * the GPU kit as HEARTH_RUNNER_ENTRY): it serves its node until the channel closes (child/serve.ts).
 */
import { serveRunner } from './child/index.js';

serveRunner();
