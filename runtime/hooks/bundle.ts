/**
 * The hook worker's own entry, bundled (function hooks are bundled by sdk/hooks/bundle.ts).
 */
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';

import { writeOnce } from '../../sdk/hooks/bundle.js';

const WORKER_ENTRY = fileURLToPath(new URL('./worker-entry.ts', import.meta.url));
const WORKER_DIR = fileURLToPath(new URL('../../node_modules/.cache/hearth/workers', import.meta.url));

let workerFile: Promise<string> | undefined;

/**
 * The hook worker's entry as one plain ES module (workers run without a TypeScript loader). piscina
 * and isolated-vm stay imports, resolved from this repository's node_modules (the file is written
 * under node_modules/.cache), so the worker shares the piscina instance that runs it.
 */
export function hookWorkerFile(): Promise<string> {
  // A runner process gets the file its node built (it cannot run esbuild: no child processes).
  const given = process.env.HEARTH_HOOK_WORKER;
  if (given) return Promise.resolve(given);
  return (workerFile ??= (async () => {
    const result = await build({
      entryPoints: [WORKER_ENTRY],
      bundle: true,
      write: false,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      external: ['piscina', 'isolated-vm'],
      // The image decoders are CommonJS and require() Node's modules: give them a require.
      banner: { js: "import { createRequire as __hearthRequire } from 'node:module'; const require = __hearthRequire(import.meta.url);" },
      logLevel: 'silent',
    });
    return (await writeOnce(WORKER_DIR, result.outputFiles[0]!.text)).path;
  })());
}
