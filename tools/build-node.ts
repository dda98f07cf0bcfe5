/**
 * Builds `npm start`'s node (platform/entry/built-main.ts): dist/node/main.mjs, the gRPC service's
 * .proto files beside it, and the runner's and hook worker's entries in node_modules/.hearth/.
 *   npx tsx tools/build-node.ts        (npm run build:node; `npm start` runs it first)
 */
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { esmBundle } from '../sdk/hooks/bundle.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
/** Packages the bundles leave as imports, resolved from node_modules at run time. */
export const EXTERNAL = ['piscina', 'isolated-vm', 'esbuild', 'pino-pretty'];

/**
 * Bundles `main` (a path in the repository) into OUT/dist/node/main.mjs and each of `extra` (file
 * name → entry) beside it, the runner's and the hook worker's entries into OUT/node_modules/.hearth/,
 * and copies the gRPC service's .proto files to OUT/dist/node/proto/.
 */
export async function bundleNode(out: string, main: string, extra: Record<string, string> = {}): Promise<void> {
  const node = join(out, 'dist', 'node');
  const hidden = join(out, 'node_modules', '.hearth');
  mkdirSync(node, { recursive: true });
  mkdirSync(hidden, { recursive: true });
  const bundle = async (entry: string, file: string) =>
    writeFileSync(file, await esmBundle(join(REPO, entry), { external: EXTERNAL }));
  await Promise.all([
    bundle(main, join(node, 'main.mjs')),
    ...Object.entries(extra).map(([file, entry]) => bundle(entry, join(node, file))),
    bundle('runtime/runner/runner-main.ts', join(hidden, 'runner.mjs')),
    bundle('runtime/hooks/worker-entry.ts', join(hidden, 'hook-worker.mjs')),
  ]);
  cpSync(join(REPO, 'platform', 'grpc', 'proto'), join(node, 'proto'), { recursive: true });
}

/** `npm start`'s node, in the repository. */
export function buildNode(): Promise<void> {
  return bundleNode(REPO, 'platform/entry/built-main.ts');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildNode();
