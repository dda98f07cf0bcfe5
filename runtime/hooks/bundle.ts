/**
 * Hearth's own entries that run without a TypeScript loader — the hook worker here, the runner
 * process (runtime/runner) — bundled into plain ES modules (function hooks are bundled by
 * sdk/hooks/bundle.ts).
 */
import { fileURLToPath } from 'node:url';

import { esmBundle, writeOnce } from '../../sdk/hooks/bundle.js';

const WORKER_ENTRY = fileURLToPath(new URL('./worker-entry.ts', import.meta.url));
const WORKER_DIR = fileURLToPath(new URL('../../node_modules/.cache/hearth/workers', import.meta.url));

/**
 * `entry` as one ES module under node_modules/.cache/hearth/workers: `external` packages stay
 * imports, resolved from this repository's node_modules (so a worker shares the piscina instance
 * that runs it, and native modules load as they are); CommonJS dependencies get a `require`.
 */
export async function bundleEntry(entry: string, external: string[]): Promise<string> {
  return (await writeOnce(WORKER_DIR, await esmBundle(entry, { external }))).path;
}

let workerFile: Promise<string> | undefined;

/** The hook worker's entry (piscina's filename). */
export function hookWorkerFile(): Promise<string> {
  // A runner process gets the file its node built (it cannot run esbuild: no child processes).
  const given = process.env.HEARTH_HOOK_WORKER;
  if (given) return Promise.resolve(given);
  workerFile ??= bundleEntry(WORKER_ENTRY, ['piscina', 'isolated-vm']);
  return workerFile;
}
