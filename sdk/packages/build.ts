/**
 * Builds the two installable packages and packs them (`npm run packages`):
 *
 * - `@hearth/sdk`: the typed client, the spec, the tensor and hook helpers, as one ES module with type
 *   declarations. Its own dependencies (zod, undici, yaml) stay imports, so the types a function
 *   folder sees are the libraries' own.
 * - `@hearth/cli`: the `hearth` binary as one bundled ES module (no tsx, no TypeScript at run time:
 *   it starts in a fraction of a second), with the hook SDK prebuilt beside it for `hearth deploy` to
 *   bundle hooks against. Its dependencies are esbuild, which bundles hooks and cannot be bundled,
 *   and undici, loaded only for TLS files.
 *
 * Dependencies travel inside the tarballs (bundledDependencies, copied from this checkout's
 * node_modules at the pinned versions): `npm install -g hearth-cli-<v>.tgz` needs no registry, and
 * the CLI's esbuild binary is this machine's platform's (pack on the platform you install on).
 *
 * Both versions and dependency pins come from the repository's package.json. Output: one folder per
 * package under `<out>/` (default dist/packages) and `hearth-sdk-<v>.tgz`, `hearth-cli-<v>.tgz` there,
 * each checked by publint (./lint.ts) before it is returned.
 *
 *   tsx sdk/packages/build.ts [--out DIR] [--no-pack]
 */
import { execFileSync } from 'node:child_process';
import { chmod, cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';

import { lintPackage } from './lint.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const BANNER =
  "import { createRequire as __hearthRequire } from 'node:module'; const require = __hearthRequire(import.meta.url);";

interface RootPackage {
  version: string;
  license: string;
  engines: Record<string, string>;
  dependencies: Record<string, string>;
}

function pins(root: RootPackage, names: string[]): Record<string, string> {
  return Object.fromEntries(
    names.map((name) => {
      const version = root.dependencies[name];
      if (!version) throw new Error(`${name} is not a dependency in package.json`);
      return [name, version];
    }),
  );
}

async function bundle(
  entry: string,
  outfile: string,
  options: { external?: string[]; shebang?: boolean; banner?: boolean } = {},
) {
  await build({
    entryPoints: [join(REPO, entry)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: options.external ?? [],
    banner: { js: `${options.shebang ? '#!/usr/bin/env node\n' : ''}${options.banner === false ? '' : BANNER}` },
    legalComments: 'none',
    logLevel: 'warning',
  });
}

const SDK_DEPENDENCIES = ['undici', 'yaml', 'zod'];
/**
 * Left out of the CLI's bundle: esbuild (a binary), undici (loaded only for TLS files), TypeScript
 * (loaded only to type-check a hook before deploy).
 */
const CLI_DEPENDENCIES = ['esbuild', 'undici', 'typescript'];
/** esbuild's JavaScript finds its binary in the platform's package. */
const ESBUILD_BINARY = `@esbuild/${process.platform}-${process.arch}`;

/** Copies `names` from the repository's node_modules into the package's (bundledDependencies). */
async function bundleDependencies(dir: string, names: string[]): Promise<void> {
  for (const name of names)
    await cp(join(REPO, 'node_modules', name), join(dir, 'node_modules', name), { recursive: true, dereference: true });
}

async function buildSdk(root: RootPackage, dir: string): Promise<void> {
  await bundle('sdk/package.ts', join(dir, 'dist', 'index.js'), { external: SDK_DEPENDENCIES });
  // Triton's .proto files, which bench() over gRPC loads from beside the bundle.
  await cp(join(REPO, 'platform', 'grpc', 'proto'), join(dir, 'dist', 'proto'), { recursive: true });
  execFileSync(
    join(REPO, 'node_modules', '.bin', 'tsc'),
    ['-p', join(REPO, 'sdk', 'packages', 'tsconfig.sdk.json'), '--outDir', join(dir, 'dist', 'types')],
    { stdio: 'inherit' },
  );
  await writeJson(join(dir, 'package.json'), {
    name: '@hearth/sdk',
    version: root.version,
    description:
      "Hearth's client, function spec and hook helpers (defineHook, tensorFromJson, transforms for images, …).",
    license: root.license,
    type: 'module',
    engines: root.engines,
    exports: { '.': { types: './dist/types/package.d.ts', import: './dist/index.js' } },
    types: './dist/types/package.d.ts',
    files: ['dist'],
    dependencies: pins(root, SDK_DEPENDENCIES),
    bundleDependencies: SDK_DEPENDENCIES,
  });
  await bundleDependencies(dir, SDK_DEPENDENCIES);
}

/**
 * The CLI's files into `dist`: `hearth.mjs` (executable), the `hook-sdk.mjs` beside it and that
 * SDK's declarations in `hook-types/`. Its dependencies (esbuild, undici, TypeScript) are found from
 * there as Node finds packages.
 */
export async function bundleCli(dist: string): Promise<string> {
  // undici (only for TLS files) stays a package beside the bundle, loaded on first use: a third of
  // the bundle otherwise, compiled on every start.
  const cli = join(dist, 'hearth.mjs');
  await bundle('sdk/cli/main.ts', cli, { external: CLI_DEPENDENCIES, shebang: true });
  await chmod(cli, 0o755);
  // Triton's .proto files, which `hearth bench --protocol grpc` loads from beside the bundle.
  await cp(join(REPO, 'platform', 'grpc', 'proto'), join(dist, 'proto'), { recursive: true });
  // What `@hearth/sdk` means inside a hook: bundled once here, aliased by `hearth deploy`.
  // No require banner: the hook's own bundle brings one.
  await bundle('sdk/hook-sdk.ts', join(dist, 'hook-sdk.mjs'), { banner: false });
  // Its declarations, which `hearth deploy` type-checks a hook against (sdk/hooks/typecheck.ts).
  execFileSync(
    join(REPO, 'node_modules', '.bin', 'tsc'),
    ['-p', join(REPO, 'sdk', 'packages', 'tsconfig.hook-sdk.json'), '--outDir', join(dist, 'hook-types')],
    { stdio: 'inherit' },
  );
  return cli;
}

async function buildCli(root: RootPackage, dir: string): Promise<void> {
  await bundleCli(join(dir, 'dist'));
  await writeJson(join(dir, 'package.json'), {
    name: '@hearth/cli',
    version: root.version,
    description: 'The `hearth` command: deploy and call PyTorch model functions on a Hearth node.',
    license: root.license,
    type: 'module',
    engines: root.engines,
    bin: { hearth: './dist/hearth.mjs' },
    files: ['dist'],
    dependencies: { ...pins(root, CLI_DEPENDENCIES), [ESBUILD_BINARY]: pins(root, ['esbuild']).esbuild },
    bundleDependencies: [...CLI_DEPENDENCIES, ESBUILD_BINARY],
  });
  await bundleDependencies(dir, [...CLI_DEPENDENCIES, ESBUILD_BINARY]);
}

async function writeJson(path: string, value: unknown): Promise<void> {
  await writeFile(path, `${JSON.stringify(value, null, 2)}\n`);
}

/** Builds both packages under `out` and, unless `pack` is false, packs them there; returns the tarballs. */
export async function buildPackages(out: string, pack = true): Promise<{ sdk: string; cli: string }> {
  const root = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as RootPackage;
  const dirs = { sdk: join(out, 'sdk'), cli: join(out, 'cli') };
  for (const dir of Object.values(dirs)) {
    await rm(dir, { recursive: true, force: true });
    await mkdir(join(dir, 'dist'), { recursive: true });
  }
  await Promise.all([buildSdk(root, dirs.sdk), buildCli(root, dirs.cli)]);
  const tarballs = {
    sdk: join(out, `hearth-sdk-${root.version}.tgz`),
    cli: join(out, `hearth-cli-${root.version}.tgz`),
  };
  if (pack) {
    for (const dir of Object.values(dirs))
      execFileSync('npm', ['pack', '--silent', '--pack-destination', out], {
        cwd: dir,
        stdio: ['ignore', 'ignore', 'inherit'],
      });
  }
  await Promise.all(
    pack
      ? Object.values(tarballs).map((tarball) => lintPackage({ tarball }))
      : Object.values(dirs).map((dir) => lintPackage({ dir })),
  );
  return tarballs;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const at = args.indexOf('--out');
  const out = resolve(at >= 0 && args[at + 1] ? args[at + 1]! : join(REPO, 'dist', 'packages'));
  const tarballs = await buildPackages(out, !args.includes('--no-pack'));
  console.log(args.includes('--no-pack') ? `built under ${out}` : `${tarballs.sdk}\n${tarballs.cli}`);
}
