/**
 * Builds the GPU kit's node (`npm run gpu:prepare` runs this): everything a GPU machine with no
 * Node.js, no npm and no network needs to start a real Hearth node and run seed 000's benchmark,
 * in one folder with no node_modules of the repository's:
 *
 *   kit/dist/node/main.mjs         the node (platform/entry/main.ts through ./kit-main.ts), bundled
 *   kit/dist/node/seed-bench.mjs   seed 000's benchmark (./seed-bench.ts), bundled
 *   kit/dist/node/proto/           the gRPC service's .proto files (read at start)
 *   kit/dist/node/engine_python.py the raw LibTorch reference (bench:engine's)
 *   kit/console/dist/              the web console
 *   kit/node_modules/.hearth/      the runner's and the hook worker's entries, bundled
 *   kit/node_modules/piscina/      the two packages that cannot be bundled: piscina (its worker
 *   kit/node_modules/isolated-vm/  file is its own) and isolated-vm (a native module, stripped)
 *
 * Usage: tsx test/gpu/kit.ts [OUT.tar.xz] (default .gpu/kit.tar.xz): the kit packed (packKit). Prints
 * its size.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { bundleNode } from '../../tools/build-node.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

export async function buildKit(out: string): Promise<{ bytes: number }> {
  rmSync(out, { recursive: true, force: true });
  const node = join(out, 'dist', 'node');
  await bundleNode(out, 'test/gpu/kit-main.ts', { 'seed-bench.mjs': 'test/gpu/seed-bench.ts' });
  cpSync(join(REPO, 'test', 'bench', 'engine_python.py'), join(node, 'engine_python.py'));
  cpSync(join(REPO, 'console', 'dist'), join(out, 'console', 'dist'), { recursive: true });
  const modules = join(REPO, 'node_modules');
  const piscina = join(out, 'node_modules', 'piscina');
  for (const f of ['package.json', 'LICENSE', 'dist'])
    cpSync(join(modules, 'piscina', f), join(piscina, f), { recursive: true });
  const ivm = join(out, 'node_modules', 'isolated-vm');
  mkdirSync(join(ivm, 'out'), { recursive: true });
  for (const f of ['package.json', 'LICENSE', 'isolated-vm.js']) cpSync(join(modules, 'isolated-vm', f), join(ivm, f));
  // Its debug symbols are 25 of its 26 MB: the kit travels within 64 MiB.
  execFileSync('strip', [
    '--strip-unneeded',
    '-o',
    join(ivm, 'out', 'isolated_vm.node'),
    join(modules, 'isolated-vm', 'out', 'isolated_vm.node'),
  ]);
  return { bytes: size(out) };
}

/**
 * The kit packed as it travels: OUT/kit.tar.xz (xz: the bundles' 24 MiB of JavaScript are ~3 MiB),
 * which test/gpu/run.sh unpacks with Python's tarfile (the GPU machine has Python, no Node.js).
 */
export function packKit(kit: string, file: string): number {
  execFileSync('tar', ['-cJf', file, '-C', kit, '.'], { env: { ...process.env, XZ_OPT: '-6 -T0' } });
  return statSync(file).size;
}

function size(path: string): number {
  const s = statSync(path);
  if (!s.isDirectory()) return s.size;
  return readdirSync(path).reduce((n, f) => n + size(join(path, f)), 0);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  // tsx test/gpu/kit.ts [OUT.tar.xz]: built in a folder beside it, packed, the folder removed.
  const file = resolve(process.argv[2] ?? join(REPO, '.gpu', 'kit.tar.xz'));
  const out = `${file}.d`;
  const { bytes } = await buildKit(out);
  const packed = packKit(out, file);
  rmSync(out, { recursive: true, force: true });
  console.log(`gpu kit: ${file} (${(bytes / 2 ** 20).toFixed(1)} MiB, packed ${(packed / 2 ** 20).toFixed(1)} MiB)`);
}

export const KIT_MAIN = (kit: string) => join(kit, 'dist', 'node', 'main.mjs');
export const KIT_BENCH = (kit: string) => join(kit, 'dist', 'node', 'seed-bench.mjs');
