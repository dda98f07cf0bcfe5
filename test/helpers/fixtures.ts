/**
 * Test models: made by test/fixtures/make_models.py with Debian's python3-torch, cached under
 * .fixtures/models (HEARTH_FIXTURES overrides), never downloaded.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** HEARTH_REPO_ROOT lets a bundled copy of these helpers (test/gpu) find the repository. */
export const REPO_ROOT = process.env.HEARTH_REPO_ROOT ?? fileURLToPath(new URL('../..', import.meta.url));
export const PYTHON = process.env.HEARTH_PYTHON ?? '/usr/bin/python3';
/**
 * The `hearth` command the tests run: the CLI bundled as its package ships it (the suite's global
 * setup builds it once: a call starts in a quarter of a second, not tsx's second), else the
 * repository's own entry through tsx. The README's walk-through and `hearth dev` run the latter.
 */
export const HEARTH_CLI = process.env.HEARTH_TEST_CLI ?? join(REPO_ROOT, 'sdk', 'cli', 'hearth.mjs');
export const MODELS_DIR = process.env.HEARTH_FIXTURES ?? join(REPO_ROOT, '.fixtures', 'models');

export type FixtureModel =
  | 'mlp'
  | 'small'
  | 'add_mul'
  | 'list_out'
  | 'dict_out'
  | 'nested'
  | 'dtypes'
  | 'aliasing'
  | 'not_tensor'
  | 'slow'
  | 'fails'
  | 'hangs'
  | 'crashes'
  | 'balloon'
  | 'expands'
  | 'resnet50'
  | 'zero_vec'
  | 'zero_image'
  | 'reads_file'
  | 'saves'
  | 'forks_file'
  | 'custom_op'
  | 'profiles'
  | 'setstate_raises'
  | 'state_dict'
  | 'pickled_module'
  | 'newer_format'
  | 'newer_op';

/** A Triton model repository of TorchScript models (test/fixtures/make_triton_repo.py). */
export const TRITON_REPO = process.env.HEARTH_TRITON_REPO ?? join(REPO_ROOT, '.fixtures', 'triton_repo');

/** Makes the fixture models and the Triton repository if they are missing or stale (a no-op when cached). */
export function ensureModels(): void {
  execFileSync(PYTHON, [join(REPO_ROOT, 'test', 'fixtures', 'make_models.py'), MODELS_DIR], { stdio: 'inherit' });
  execFileSync(PYTHON, [join(REPO_ROOT, 'test', 'fixtures', 'make_triton_repo.py'), TRITON_REPO], { stdio: 'inherit' });
}

export function modelPath(name: FixtureModel): string {
  const path = join(MODELS_DIR, `${name}.pt`);
  if (!existsSync(path)) throw new Error(`fixture ${path} is missing: run npm run fixtures`);
  return path;
}
