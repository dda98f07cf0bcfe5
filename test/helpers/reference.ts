/**
 * The independent reference: the same TorchScript file run directly by python3-torch
 * (test/fixtures/reference.py), on the same input bytes. The suite's global setup starts the
 * script as a server (HEARTH_REFERENCE_SOCKET) so torch is imported once rather than on every
 * call; each answer still comes from a process of its own. Without it, a process per call.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';

import type { EngineDType, NamedTensor, Tensor } from '../../sdk/tensor.js';
import { viewAs } from '../../sdk/tensor.js';
import { PYTHON, REPO_ROOT } from './fixtures.js';

function bytesOf(t: Tensor): Buffer {
  return Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
}

const SCRIPT = join(REPO_ROOT, 'test', 'fixtures', 'reference.py');

function reference(request: string): Buffer {
  const socket = process.env.HEARTH_REFERENCE_SOCKET;
  if (socket) {
    const r = spawnSync(PYTHON, ['-I', '-S', SCRIPT, '--client', socket], { input: request, maxBuffer: 1 << 30 });
    if (r.status === 0) return r.stdout;
    if (r.status !== 3) throw new Error(`python3-torch reference failed: ${r.stderr.toString()}`);
  }
  return execFileSync(PYTHON, [SCRIPT], { input: request, maxBuffer: 1 << 30 });
}

export interface ReferenceResult {
  kind: string;
  outputs: NamedTensor<EngineDType>[];
}

export function pythonForward(model: string, inputs: readonly Tensor[], threads = 1): ReferenceResult {
  return pythonForwardMany(model, [inputs], threads)[0]!;
}

/** Several forwards of one model in one python3-torch process. */
export function pythonForwardMany(model: string, runs: readonly (readonly Tensor[])[], threads = 1): ReferenceResult[] {
  const request = JSON.stringify({
    model,
    threads,
    runs: runs.map((inputs) =>
      inputs.map((t) => ({ dtype: t.dtype, shape: t.shape, b64: bytesOf(t).toString('base64') })),
    ),
  });
  const stdout = reference(request);
  const results = JSON.parse(stdout.toString()) as {
    kind: string;
    outputs: { name: string; dtype: EngineDType; shape: number[]; b64: string }[];
  }[];
  return results.map((result) => ({
    kind: result.kind,
    outputs: result.outputs.map((o) => {
      const raw = Buffer.from(o.b64, 'base64');
      const copy = new Uint8Array(raw.byteLength);
      copy.set(raw);
      return { name: o.name, dtype: o.dtype, shape: o.shape, data: viewAs(o.dtype, copy) };
    }),
  }));
}
