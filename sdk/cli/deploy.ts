/**
 * `hearth deploy <dir>`: read the spec (hearth.yaml, or a Triton model folder's config.pbtxt),
 * bundle the hook, hash and upload what the node does not have yet (HEAD first; a progress bar with
 * bytes and rate), create the version.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';

import { SingleBar } from 'cli-progress';

import type { CanaryRequest } from '../api/index.js';
import type { DeployResult, Hearth } from '../client.js';
import { InvalidInputError } from '../errors.js';
import { bundleHook } from '../hooks/bundle.js';
import type { TypeProblem } from '../hooks/typecheck.js';
import { formatProblem, typecheckHook } from '../hooks/typecheck.js';
import type { FunctionSpec } from '../spec/index.js';
import {
  exampleArtifact,
  loadTritonModelFolder,
  MAX_EXAMPLE_BYTES,
  parseSpec,
  parseSpecYaml,
  realInside,
} from '../spec/index.js';

export interface DeployOptions {
  keepTraffic?: boolean;
  /** A share of the traffic for a window, watched by the node, then promoted or rolled back. */
  canary?: CanaryRequest;
  /** Runs the function on this device whatever its spec says (`cpu` runs a GPU config locally). */
  device?: string;
  /**
   * Resources that override the spec's, section by section (the deploy flags): spec.limits (hook
   * time, memory and queue, runner memory, forward time), spec.instances (count, threads),
   * spec.scaling (min, max) and spec.batching (maxQueueSize). Undefined entries change nothing.
   */
  overrides?: {
    limits?: Partial<Record<keyof FunctionSpec['limits'], number | undefined>>;
    instances?: { count?: number; threads?: number };
    scaling?: { minInstances?: number; maxInstances?: number };
    batching?: { maxQueueSize?: number };
  };
  /** Draw progress bars (on a terminal). */
  progress?: boolean;
  /** Type-check the hook first and refuse it with tsc's messages (default true; `--no-typecheck`). */
  typecheck?: boolean;
}

export interface Deployed extends DeployResult {
  uploaded: { model: boolean; hook: boolean };
  /** What the import of a Triton folder decided or could not honour (fields with no effect, the model file it chose). */
  notes: string[];
}

/**
 * The model folders of a Triton repository root (`model_repository/` with `resnet/config.pbtxt`,
 * …): its sub-folders that hold a config.pbtxt or a hearth.yaml, in name order. Undefined when `dir`
 * is itself a function folder, or holds none.
 */
export async function modelFolders(dir: string): Promise<string[] | undefined> {
  const has = (folder: string, file: string) =>
    stat(join(folder, file)).then(
      (s) => s.isFile(),
      () => false,
    );
  const root = resolve(dir);
  if ((await has(root, 'hearth.yaml')) || (await has(root, 'config.pbtxt'))) return undefined;
  const entries = await readdir(root, { withFileTypes: true }).catch(() => []);
  const folders: string[] = [];
  for (const e of entries.filter((e) => e.isDirectory()).sort((a, b) => a.name.localeCompare(b.name))) {
    const folder = join(root, e.name);
    if ((await has(folder, 'config.pbtxt')) || (await has(folder, 'hearth.yaml'))) folders.push(folder);
  }
  return folders.length > 0 ? folders : undefined;
}

/** The spec of a function folder: hearth.yaml, or config.pbtxt for a Triton model folder. */
export async function readSpec(dir: string): Promise<FunctionSpec> {
  return (await readFolder(dir)).spec;
}

async function readFolder(dir: string): Promise<{ spec: FunctionSpec; notes: string[] }> {
  const yaml = await readFile(join(dir, 'hearth.yaml'), 'utf8').catch(() => undefined);
  if (yaml !== undefined) return { spec: parseSpecYaml(yaml, join(dir, 'hearth.yaml')), notes: [] };
  const triton = await stat(join(dir, 'config.pbtxt')).then(
    () => true,
    () => false,
  );
  if (triton) return loadTritonModelFolder(dir);
  throw new InvalidInputError(
    `${dir} has neither hearth.yaml nor config.pbtxt: run \`hearth init ${dir}\` to start one`,
  );
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Uploads a file unless the node has it; true when bytes were sent. */
async function ensureArtifact(
  client: Hearth,
  path: string,
  label: string,
  progress: boolean,
): Promise<{ sha256: string; uploaded: boolean }> {
  const sha256 = await sha256File(path);
  if (await client.artifact(sha256)) return { sha256, uploaded: false };
  const { size } = await stat(path);
  const bar = progress
    ? new SingleBar({
        format: `${label.padEnd(6)} [{bar}] {percentage}% | {value}/{total} MB | {rate} MB/s`,
        hideCursor: true,
      })
    : undefined;
  const started = performance.now();
  let sent = 0;
  bar?.start(Math.ceil(size / 1e6), 0, { rate: '0.0' });
  const source = createReadStream(path, { highWaterMark: 1 << 20 });
  source.on('data', (chunk) => {
    sent += chunk.length;
    bar?.update(Math.floor(sent / 1e6), { rate: (sent / 1e6 / ((performance.now() - started) / 1000)).toFixed(1) });
  });
  try {
    await client.uploadArtifact(sha256, Readable.toWeb(source) as ReadableStream<Uint8Array>, size);
  } finally {
    bar?.update(Math.ceil(size / 1e6));
    bar?.stop();
  }
  return { sha256, uploaded: true };
}

export async function deployFolder(client: Hearth, folder: string, options: DeployOptions = {}): Promise<Deployed> {
  const dir = resolve(folder);
  const read = await readFolder(dir);
  const notes = [...read.notes];
  let spec = read.spec;
  if (options.device !== undefined && options.device !== spec.instances.device) {
    notes.push(`instances.device ${spec.instances.device} → ${options.device} (--device)`);
    spec = parseSpec({ ...spec, instances: { ...spec.instances, device: options.device } }, '--device');
  }
  // Every section merged first, then the spec's rules once (--instances 6 --max 8 is fine together).
  let merged: Record<string, unknown> = spec;
  for (const [section, values] of Object.entries(options.overrides ?? {})) {
    const given = Object.fromEntries(Object.entries(values ?? {}).filter(([, v]) => v !== undefined));
    if (Object.keys(given).length === 0) continue;
    const key = section as 'limits' | 'instances' | 'scaling' | 'batching';
    notes.push(
      `${Object.keys(given)
        .map((k) => `${key}.${k}`)
        .join(', ')} from the deploy flags`,
    );
    merged = { ...merged, [key]: { ...spec[key], ...given } };
  }
  if (merged !== spec) spec = parseSpec(merged, 'the deploy flags');
  const modelPath = join(dir, spec.model);
  if (
    !(await stat(modelPath).then(
      (s) => s.isFile(),
      () => false,
    ))
  ) {
    const exporter = await stat(join(dir, 'export.py')).then(
      () => true,
      () => false,
    );
    throw new InvalidInputError(
      `${modelPath} does not exist${exporter ? `: run \`python3 export.py\` in ${folder} to make it` : ''}`,
    );
  }
  // The bytes uploaded are the folder's own, never a file a symbolic link reaches outside it.
  await realInside(dir, modelPath, 'the model file');
  let hookBundle: string | undefined;
  const work = await mkdtemp(join(tmpdir(), 'hearth-deploy-'));
  try {
    if (spec.hook) {
      if (options.typecheck !== false) await refuseIllTyped(dir, spec.hook, notes);
      hookBundle = (await bundleHook(join(dir, spec.hook), work)).path;
    }
    const model = await ensureArtifact(client, modelPath, 'model', options.progress ?? false);
    const hook = hookBundle ? await ensureArtifact(client, hookBundle, 'hook', false) : undefined;
    const example = spec.exampleFile ? await uploadExample(client, dir, spec, work) : undefined;
    const result = await client.deploy(
      spec,
      { model: model.sha256, ...(hook ? { hook: hook.sha256 } : {}), ...(example ? { example } : {}) },
      { keepTraffic: options.keepTraffic, canary: options.canary },
    );
    return { ...result, uploaded: { model: model.uploaded, hook: hook?.uploaded ?? false }, notes };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * The spec's exampleFile, a file of the folder (never one a link reaches outside it), uploaded as an
 * example made for this function (exampleArtifact): its sha256.
 */
async function uploadExample(client: Hearth, dir: string, spec: FunctionSpec, work: string): Promise<string> {
  const file = spec.exampleFile!;
  const path = join(dir, file);
  const found = await stat(path).catch(() => undefined);
  if (!found?.isFile()) throw new InvalidInputError(`exampleFile ${file} is not a file in ${dir}`);
  await realInside(dir, path, 'the example file');
  if (found.size > MAX_EXAMPLE_BYTES)
    throw new InvalidInputError(
      `exampleFile ${file} is ${found.size} bytes; a smoke request is at most ${MAX_EXAMPLE_BYTES} (32 MiB)`,
    );
  const wrapped = join(work, 'example');
  await writeFile(wrapped, exampleArtifact(spec.name, await readFile(path)));
  return (await ensureArtifact(client, wrapped, 'example', false)).sha256;
}

/**
 * The gate before a hook is bundled: tsc's errors, file:line, as one InvalidInputError. A CLI without
 * TypeScript (the GPU kit's bundled node) says so in a note and deploys unchecked.
 */
export async function refuseIllTyped(dir: string, hook: string, notes: string[]): Promise<void> {
  let problems: TypeProblem[];
  try {
    problems = await typecheckHook(dir, hook);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    notes.push(`${hook} was not type-checked: this CLI has no TypeScript`);
    return;
  }
  if (problems.length === 0) return;
  const shown = problems.slice(0, 20).map(formatProblem);
  if (problems.length > 20) shown.push(`… and ${problems.length - 20} more`);
  throw new InvalidInputError(
    `${hook} does not type-check (${problems.length} error${problems.length === 1 ? '' : 's'}; --no-typecheck deploys it anyway):\n${shown.join('\n')}`,
    { reason: 'typecheck' },
  );
}
