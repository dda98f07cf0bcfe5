/**
 * What a bench run loads, resolved once before the first step: the route, the bodies (from the
 * function's spec, the model's metadata, the spec's example or a file) and how to read the server's
 * statistics for it.
 */

import { z } from 'zod';

import { describe } from '../client/functions.js';
import { parsed, type Transport } from '../client/transport.js';
import type { Sender } from './http-target.js';
import { httpTarget } from './http-target.js';
import type { InputTensor } from './inputs.js';
import { exampleBody, randomFunctionBodies, randomKserveBodies, randomRawInputs, rawFromKserveJson } from './inputs.js';
import type { StatsSnapshot } from './server-stats.js';
import { modelPath, snapshot } from './server-stats.js';
import type { BenchBody, BenchInputSource, BenchOptions } from './types.js';
import { BenchUsageError } from './usage-error.js';

export interface ResolvedTarget {
  /** The route in words: `POST http://…/fn/name`, `gRPC 127.0.0.1:8001 ModelInfer name`. */
  target: string;
  input: BenchInputSource;
  /** A sender with `connections` sockets (HTTP; gRPC multiplexes one channel). */
  sender(connections: number): Promise<Sender>;
  /** The server's statistics for the split (none for a route that is not Hearth's). */
  stats?(): Promise<StatsSnapshot>;
}

/** The PEM text of the TLS files, read by the caller. */
export type TlsText = { ca?: string; cert?: string; key?: string } | undefined;

/** The function's spec (of `version`, else of the version taking most traffic) and whether it has a hook. */
async function functionSpec(node: Transport, name: string, version?: number) {
  const info = await describe(node, name);
  const [top] = Object.entries(info.traffic).sort((a, b) => b[1] - a[1]);
  const wanted = version ?? (top ? Number(top[0]) : undefined);
  const v = info.versions.find((x) => x.version === wanted) ?? info.versions.at(-1);
  if (!v) throw new BenchUsageError(`function ${name} has no version to load`);
  const spec = v.spec as {
    inputs: { name: string; dtype: string; dims: number[] }[];
    maxBatchSize: number;
    example?: unknown;
  };
  const inputs: InputTensor[] = spec.inputs.map((i) => ({
    name: i.name,
    datatype: i.dtype,
    shape: spec.maxBatchSize > 0 ? [-1, ...i.dims] : i.dims,
  }));
  return { inputs, example: spec.example, hook: v.artifacts.hook !== undefined };
}

/** The source asked for, else: the file given, the spec's example, random inputs. */
function sourceOf(o: BenchOptions, example: unknown): BenchInputSource {
  if (o.input) return o.input;
  if (o.bodies) return 'file';
  return example !== undefined && (o.protocol ?? 'function') === 'function' ? 'example' : 'random';
}

async function functionTarget(o: BenchOptions, node: Transport, tls: TlsText): Promise<ResolvedTarget> {
  const { inputs, example, hook } = await functionSpec(node, o.name, o.version);
  const input = sourceOf(o, example);
  let bodies: BenchBody[];
  if (input === 'file') bodies = requireBodies(o);
  else if (input === 'example') {
    if (example === undefined)
      throw new BenchUsageError(`function ${o.name}'s spec has no example: give --input-file, or --input random`);
    bodies = [exampleBody(example)];
  } else {
    if (hook)
      throw new BenchUsageError(
        `function ${o.name} has a hook, whose body random tensors would not fit: give its spec an example, or --input-file`,
      );
    bodies = randomFunctionBodies(inputs);
  }
  const path = `/fn/${encodeURIComponent(o.name)}${o.version === undefined ? '' : `/versions/${o.version}`}`;
  return {
    target: `POST ${node.url}${path}`,
    input,
    sender: (connections) => httpTarget({ ...common(o, node, tls), path, bodies, connections }),
    stats: () => snapshot(node, o.name, o.version, true),
  };
}

function requireBodies(o: BenchOptions): BenchBody[] {
  if (!o.bodies?.length) throw new BenchUsageError(`${o.path ? '--path' : '--input file'} needs --input-file`);
  return o.bodies;
}

const common = (o: BenchOptions, node: Transport, tls: TlsText) => ({
  url: node.url,
  apiKey: o.apiKey ?? process.env.HEARTH_API_KEY,
  tls,
  timeoutMs: o.timeoutMs ?? 60_000,
});

/** One input of a model's metadata: the shape and dtype random bodies are made of. */
const InputTensorSchema = z.object({ name: z.string(), datatype: z.string(), shape: z.array(z.number().int()) });

/** A KServe model's inputs from its metadata (GET /v2/models/NAME), refused unless each is well formed. */
async function modelInputs(node: Transport, name: string, version?: number): Promise<InputTensor[]> {
  const metadata = (await (await node.request(modelPath(name, version))).json()) as { inputs?: unknown };
  if (!Array.isArray(metadata.inputs)) throw new BenchUsageError(`model ${name}'s metadata lists no inputs`);
  return parsed(z.array(InputTensorSchema), metadata.inputs, `model ${name}'s metadata`);
}

async function kserveTarget(o: BenchOptions, node: Transport, tls: TlsText): Promise<ResolvedTarget> {
  const input = sourceOf(o, undefined);
  if (input === 'example')
    throw new BenchUsageError(
      "--input example is a function URL's body: with --protocol http or grpc give random or a file",
    );
  const stats = () => snapshot(node, o.name, o.version, false);
  if (o.protocol === 'grpc') {
    const inputs = await modelInputs(node, o.name, o.version);
    // A file's bodies are KServe JSON infer requests, sent as ModelInfer's raw tensors.
    const requests = input === 'file' ? rawFromKserveJson(requireBodies(o), inputs) : randomRawInputs(inputs);
    const address = o.grpcUrl ?? `${new URL(node.url).hostname}:8001`;
    return {
      target: `gRPC ${address} ModelInfer ${o.name}`,
      input,
      sender: async () => {
        const { grpcTarget } = await import('./grpc-target.js');
        const { apiKey, timeoutMs } = common(o, node, tls);
        return grpcTarget({
          address,
          model: o.name,
          version: o.version,
          inputs,
          requests,
          apiKey,
          tls,
          secure: new URL(node.url).protocol === 'https:',
          timeoutMs,
        });
      },
      stats,
    };
  }
  const bodies =
    input === 'file'
      ? requireBodies(o)
      : randomKserveBodies(await modelInputs(node, o.name, o.version), o.format ?? 'binary');
  const path = `${modelPath(o.name, o.version)}/infer`;
  return {
    target: `POST ${node.url}${path} (${input === 'file' ? 'file' : (o.format ?? 'binary')})`,
    input,
    sender: (connections) => httpTarget({ ...common(o, node, tls), path, bodies, connections }),
    stats,
  };
}

/** `--path`: POST the file's bodies to any route. */
function routeTarget(o: BenchOptions & { path: string }, node: Transport, tls: TlsText): ResolvedTarget {
  if (!/^\/[\x21-\x7e]{0,2047}$/.test(o.path))
    throw new BenchUsageError(`--path ${o.path}: give a route starting with / (printable ASCII, no spaces)`);
  const bodies = requireBodies(o);
  return {
    target: `POST ${node.url}${o.path}`,
    input: 'file',
    sender: (connections) => httpTarget({ ...common(o, node, tls), path: o.path, bodies, connections }),
  };
}

export async function resolveTarget(o: BenchOptions, node: Transport, tls: TlsText): Promise<ResolvedTarget> {
  if (o.path !== undefined) return routeTarget({ ...o, path: o.path }, node, tls);
  return (o.protocol ?? 'function') === 'function' ? functionTarget(o, node, tls) : kserveTarget(o, node, tls);
}
