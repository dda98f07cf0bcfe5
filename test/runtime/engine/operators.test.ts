/**
 * The operator check (native/src/model_audit.cc, model_ops.cc), straight through the engine: what
 * the red team deployed (torch.from_file through torch.jit._fork), operators outside the allow
 * list, and a __setstate__ that must not run before the check. The node refuses these at deploy
 * (test/platform/sandbox.test.ts); here they load in this process, with no jail around them.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, describe, expect, it } from 'vitest';

import { loadModel } from '../../../runtime/engine/index.js';
import type { HearthError } from '../../../sdk/errors.js';
import { ModelLoadError } from '../../../sdk/errors.js';
import { modelPath, PYTHON, REPO_ROOT } from '../../helpers/fixtures.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-operators-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

async function refusal(path: string): Promise<HearthError> {
  const error = await loadModel(path).then(
    (model) => {
      model.dispose();
      throw new Error(`${path} loaded`);
    },
    (e: unknown) => e as HearthError,
  );
  expect(error).toBeInstanceOf(ModelLoadError);
  return error;
}

describe('the operator check', () => {
  it('refuses torch.from_file called through torch.jit._fork, naming the op and the fork', async () => {
    const error = await refusal(modelPath('forks_file'));
    expect(error.reason).toBe('ERR_MODEL_UNSAFE');
    expect(error.message).toMatch(
      /^the model calls aten::from_file \(it reads, writes and creates files\) in hostile_models\.ForksFile\.forward\(\), in the subgraph of prim::fork;/,
    );
  });

  it('refuses operators of namespaces outside the allow list: a custom one, and profiler::', async () => {
    const custom = await refusal(modelPath('custom_op'));
    expect(custom.reason).toBe('ERR_MODEL_UNSAFE');
    expect(custom.message).toMatch(
      /^the model calls hearth_test::leak \(an operator of namespace hearth_test, which Hearth does not run: it runs those of aten, prim, quantized, _quantized, prepacked\) at code\/__torch__\/hostile_models\.py:\d+;/,
    );
    const profiles = await refusal(modelPath('profiles'));
    expect(profiles.reason).toBe('ERR_MODEL_UNSAFE');
    expect(profiles.message).toMatch(
      /^the model calls profiler::\w+ \(an operator of namespace profiler,.* in [\w.]+\(\);/,
    );
  });

  it('refuses a __setstate__ that would write a file before it runs: the file is never made', async () => {
    const marker = join(dir, `written-${randomUUID()}`);
    const model = join(dir, 'at-load.pt');
    const script = join(REPO_ROOT, 'test', 'fixtures', 'make_models.py');
    await promisify(execFile)(PYTHON, [script, '--at-load', 'write', marker, '16', model]);
    const error = await refusal(model);
    expect(error.reason).toBe('ERR_MODEL_UNSAFE');
    expect(error.message).toMatch(/aten::from_file .* in hostile_models\.AtLoad\.__setstate__\(\)/);
    expect(existsSync(marker)).toBe(false);
  });

  it("puts a raising __setstate__'s own error first, the traceback after it", async () => {
    const error = await refusal(modelPath('setstate_raises'));
    expect(error.reason).toBe('ERR_MODEL_LOAD');
    expect(error.message).toMatch(/^the model's code failed as the file loaded: builtins\.RuntimeError: \u202ePWNED/);
    expect(error.message).toContain('Traceback of TorchScript');
  });
});
