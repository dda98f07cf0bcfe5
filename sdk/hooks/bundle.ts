/**
 * esbuild bundling of a function's hook.ts into one ES module: what `hearth deploy` uploads and
 * what a node runs in its hook threads.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { HookError } from '../errors.js';

/**
 * What `@hearth/sdk` means inside a hook: the source beside this file in the repository, or the
 * prebuilt `hook-sdk.mjs` beside the bundled CLI of the `@hearth/cli` package (sdk/packages/build.ts).
 * A function folder's own installed `@hearth/sdk` is for its editor's types; the hook contract is the
 * CLI's.
 */
const SDK_ENTRY = fileURLToPath(
  new URL(import.meta.url.endsWith('.ts') ? '../hook-sdk.ts' : './hook-sdk.mjs', import.meta.url),
);

export interface BundleOptions {
  /** Packages left as imports (native modules such as sharp cannot be bundled). */
  external?: string[];
}

/** Writes `code` to `dir/<sha256>.mjs` unless the same bytes are there already. */
export async function writeOnce(dir: string, code: string): Promise<{ path: string; sha256: string }> {
  const sha256 = createHash('sha256').update(code).digest('hex');
  const path = join(dir, `${sha256}.mjs`);
  const existing = await readFile(path, 'utf8').catch(() => undefined);
  if (existing !== code) {
    await mkdir(dir, { recursive: true });
    const tmp = `${path}.${process.pid}.tmp`;
    await writeFile(tmp, code);
    await rename(tmp, path);
  }
  return { path, sha256 };
}

/**
 * esbuild: `entry` and everything it imports but `external` as one ES module for Node. CommonJS
 * dependencies that require() Node's modules get a real require inside the ES module.
 */
export async function esmBundle(
  entry: string,
  options: { external?: string[]; alias?: Record<string, string>; sourceMap?: boolean } = {},
): Promise<string> {
  // Loaded when first used: a node that runs prebuilt entries (the GPU kit) carries no esbuild.
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    ...(options.alias ? { alias: options.alias } : {}),
    // An inline map, sources named from the entry's folder (`hook.ts`), their text left out: what
    // a failure's frames are mapped back with (runtime/hooks/stack.ts).
    ...(options.sourceMap
      ? { sourcemap: 'inline' as const, sourcesContent: false, absWorkingDir: resolve(dirname(entry)) }
      : {}),
    external: options.external ?? [],
    banner: {
      js: "import { createRequire as __hearthRequire } from 'node:module'; const require = __hearthRequire(import.meta.url);",
    },
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

/**
 * Bundles a hook (and everything it imports but `external`) into one ES module, written to
 * `outDir/<sha256>.mjs`. `@hearth/sdk` resolves to the CLI's hook SDK (SDK_ENTRY); everything else
 * resolves from the hook's own folder (its node_modules).
 */
export async function bundleHook(
  entry: string,
  outDir: string,
  options: BundleOptions = {},
): Promise<{ path: string; sha256: string }> {
  let code: string;
  try {
    code = await esmBundle(entry, {
      alias: { '@hearth/sdk': SDK_ENTRY },
      external: options.external ?? [],
      sourceMap: true,
    });
  } catch (cause) {
    const errors = (cause as { errors?: { text: string; location?: { file: string; line: number } | null }[] }).errors;
    const detail = errors
      ?.map((e) => (e.location ? `${e.location.file}:${e.location.line}: ${e.text}` : e.text))
      .join('; ');
    throw new HookError(`the hook ${entry} does not bundle: ${detail ?? (cause as Error).message}`, {
      cause,
      reason: 'bundle',
    });
  }
  return writeOnce(outDir, code);
}
