/** A version's model and hook as local files: fetched from the artifact store and verified. */
import { copyFile, mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

import type { ArtifactStore } from '../artifacts/index.js';
import type { FunctionVersion } from '../registry/index.js';

export interface VersionFiles {
  model: string;
  hookBundle?: string;
  /** The hook artifact as the store holds it locally. */
  hook?: { path: string; sha256: string; size: number };
  source: string;
  /** The values of the secrets the spec lists (PoolSet adds them at each load). */
  secrets?: Record<string, string>;
}

/**
 * A version's model and hook as local files, fetched from the artifact store and verified. A
 * runner links them into its own directory (the hook as hook.mjs); an in-process pool imports the
 * hook, from importable().
 */
export async function versionFiles(version: FunctionVersion, artifacts: ArtifactStore): Promise<VersionFiles> {
  const model = await artifacts.local(version.artifacts.model);
  const hook = version.artifacts.hook ? await artifacts.local(version.artifacts.hook) : undefined;
  return { model: model.path, hookBundle: hook?.path, hook, source: model.source };
}

/** The files with the hook bundle under a .mjs name the hook worker can import (isolation none). */
export async function importable(files: VersionFiles, dataDir: string): Promise<VersionFiles> {
  const { hook } = files;
  if (!hook) return files;
  const path = join(dataDir, 'hooks', `${hook.sha256}.mjs`);
  const present = await stat(path).then(
    (s) => s.size === hook.size,
    () => false,
  );
  if (!present) {
    await mkdir(join(dataDir, 'hooks'), { recursive: true });
    await copyFile(hook.path, path);
  }
  return { ...files, hookBundle: path };
}
