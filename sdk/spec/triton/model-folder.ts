/** A Triton model folder on disk: config.pbtxt, its version policy, the version folders and their model files. */
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { basename, join, normalize, sep } from 'node:path';

import { InvalidInputError } from '../../errors.js';
import type { FunctionSpec } from '../function-spec.js';
import { parseSpec } from '../parse.js';
import { tritonConfigToInput } from './triton-config.js';
import type { VersionPolicy } from './version-policy.js';

export interface TritonModelFolder {
  spec: FunctionSpec;
  /** The folder. */
  dir: string;
  /** The version whose model file the spec names ("1/model.pt"). */
  version: number;
  /** What the import decided or could not honour, for the deploy's output. */
  notes: string[];
}

/** A file name from a config, checked to stay inside the model folder. */
function inside(dir: string, file: string, field: string): string {
  const clean = normalize(file);
  if (clean.startsWith('..') || clean.startsWith('/'))
    throw new InvalidInputError(`config.pbtxt: ${field} "${file}" must name a file inside the model folder`, {
      reason: field,
    });
  return join(dir, clean);
}

/**
 * The real path of a file a folder names, which must stay inside the folder once symlinks are
 * followed: a label file linked to ~/.ssh/id_rsa would otherwise be published to every caller.
 */
export async function realInside(dir: string, path: string, field: string): Promise<string> {
  const [root, real] = await Promise.all([realpath(dir), realpath(path)]);
  if (real !== root && !real.startsWith(root + sep))
    throw new InvalidInputError(
      `${field} "${path}" is a symbolic link to ${real}, outside the folder ${dir}: copy the file into the folder`,
      { reason: field },
    );
  return real;
}

/**
 * Reads a Triton model folder: config.pbtxt, the version folder its version_policy serves (the
 * highest by default), the model file in it (default_model_filename, else model.pt, else the one
 * .pt file there), and label files.
 */
export async function loadTritonModelFolder(dir: string): Promise<TritonModelFolder> {
  let text: string;
  try {
    text = await readFile(join(dir, 'config.pbtxt'), 'utf8');
  } catch (cause) {
    throw new InvalidInputError(`${dir} has no readable config.pbtxt`, { cause });
  }
  const notes: string[] = [];
  const input = tritonConfigToInput(text, { folderName: basename(dir), notes });
  const { versionPolicy, ...specInput } = input;
  const named = /default_model_filename/.test(text);
  const numbered = (await readdir(dir))
    .filter((e) => /^\d+$/.test(e))
    .map(Number)
    .sort((a, b) => b - a);
  // A version folder is available when it holds the model file: default_model_filename, else
  // model.pt, else (seed layouts such as 1/resnet50.pt) its only .pt file, said in the notes.
  const files = new Map<number, string>();
  for (const v of numbered) {
    const versionDir = join(dir, String(v));
    if (
      await stat(inside(versionDir, specInput.model, 'default_model_filename')).then(
        (s) => s.isFile(),
        () => false,
      )
    ) {
      files.set(v, specInput.model);
    } else if (!named) {
      const pts = (await readdir(versionDir).catch(() => [] as string[])).filter((f) => /\.pt$/.test(f));
      if (pts.length === 1) files.set(v, pts[0]!);
    }
  }
  const available = [...files.keys()];
  if (available.length === 0)
    throw new InvalidInputError(
      `${dir} has no <version>/${specInput.model} (versions found: ${numbered.join(', ') || 'none'})`,
    );
  const served = servedVersions(versionPolicy ?? { latest: 1 }, available);
  if (served.length === 0)
    throw new InvalidInputError(
      `config.pbtxt: version_policy serves none of the versions with a model file (${available.join(', ')})`,
      { reason: 'version_policy' },
    );
  if (served.length > 1) {
    throw new InvalidInputError(
      `config.pbtxt: version_policy serves versions ${served.join(', ')}; a Hearth deploy serves one version folder — deploy them one at a time (each becomes a Hearth version) or use latest { num_versions: 1 }`,
      { reason: 'version_policy' },
    );
  }
  const version = served[0]!;
  const model = files.get(version)!;
  if (model !== specInput.model)
    notes.push(
      `serving ${version}/${model}: the only .pt file in ${version}/ (Triton looks for model.pt; set default_model_filename: "${model}" to say so)`,
    );
  for (const output of specInput.outputs) {
    if (!output.labelFile) continue;
    const field = `output "${output.name}" label_filename`;
    const path = inside(dir, output.labelFile, field);
    let labels: string;
    try {
      labels = await readFile(await realInside(dir, path, `config.pbtxt: ${field}`), 'utf8');
    } catch (cause) {
      if (cause instanceof InvalidInputError) throw cause;
      throw new InvalidInputError(
        `config.pbtxt: output "${output.name}" label_filename "${output.labelFile}" cannot be read`,
        { cause },
      );
    }
    output.labels = labels.split(/\r?\n/);
    if (output.labels.at(-1) === '') output.labels.pop();
  }
  if (numbered.length > 1)
    notes.unshift(
      `serving version folder ${version} of ${numbered.join(', ')}${versionPolicy ? ' (version_policy)' : ' (the latest)'}`,
    );
  return { spec: parseSpec({ ...specInput, model: `${version}/${model}` }, 'config.pbtxt'), dir, version, notes };
}

/** The version folders a policy serves, highest first. */
export function servedVersions(policy: VersionPolicy, available: readonly number[]): number[] {
  const sorted = [...available].sort((a, b) => b - a);
  if ('all' in policy) return sorted;
  if ('specific' in policy) return sorted.filter((v) => policy.specific.includes(v));
  return sorted.slice(0, Math.max(1, policy.latest));
}
