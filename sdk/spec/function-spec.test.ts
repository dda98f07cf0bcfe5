import { readFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';

import { InvalidInputError } from '../errors.js';
import { exampleFileType, gpuMemoryBytes } from './function-spec.js';
import { functionSpecJsonSchema } from './json-schema.js';
import { parseSpec, parseSpecYaml } from './parse.js';
import { specReference, withReference } from './reference.js';
import { REFERENCE_FILE, SCHEMA_FILE } from './write-schema.js';

const minimal = {
  name: 'tabular-mlp',
  model: 'model.pt',
  inputs: [{ name: 'x', dtype: 'FP32', dims: [1024] }],
  outputs: [{ name: 'y', dtype: 'FP32', dims: [1024] }],
};

function error(value: unknown): InvalidInputError {
  try {
    parseSpec(value);
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidInputError);
    return e as InvalidInputError;
  }
  throw new Error('expected the spec to be refused');
}

describe('function spec', () => {
  it('fills in the defaults a user would expect', () => {
    const spec = parseSpec(minimal);
    expect(spec.maxBatchSize).toBe(0);
    expect(spec.batching).toEqual({
      preferredBatchSizes: [],
      maxQueueDelayUs: 0,
      maxQueueSize: 4096,
      defaultTimeoutUs: 0,
      priorityLevels: 1,
      defaultPriorityLevel: 1,
    });
    expect(spec.instances).toEqual({ count: 1, device: 'auto', threads: 0 });
    expect(spec.scaling).toEqual({
      minInstances: 0,
      maxInstances: 4,
      targetQueueDepth: 8,
      scaleDownAfterS: 300,
      stableWindowS: 30,
    });
    expect(spec.hook).toBeUndefined();
  });

  it.each([
    '..',
    '.',
    '../x',
    'a/b',
    '.hidden',
    '-a',
    'a b',
    'a%2Fb',
    '',
    'a'.repeat(129),
  ])('refuses the name %j', (name) => {
    expect(error({ ...minimal, name }).reason).toBe('name');
  });

  it('takes a 63-character name and single characters', () => {
    expect(parseSpec({ ...minimal, name: 'a'.repeat(63) }).name).toHaveLength(63);
    expect(parseSpec({ ...minimal, name: '7' }).name).toBe('7');
  });

  it('caps GPU memory by a fraction or a size, in bytes of the device, and refuses a cap off CUDA', () => {
    const total = 80 * 2 ** 30;
    const as = (gpuMemory: unknown, device = 'cuda') => parseSpec({ ...minimal, instances: { device, gpuMemory } });
    expect(gpuMemoryBytes(as(0.25).instances.gpuMemory, total)).toBe(20 * 2 ** 30);
    expect(gpuMemoryBytes(as('12GiB').instances.gpuMemory, total)).toBe(12 * 2 ** 30);
    expect(gpuMemoryBytes(as('1.5GB', 'cuda:1').instances.gpuMemory, total)).toBe(1.5e9);
    expect(gpuMemoryBytes(as('800MiB', 'auto').instances.gpuMemory, total)).toBe(800 * 2 ** 20);
    expect(gpuMemoryBytes(undefined, total)).toBeUndefined();
    expect(error({ ...minimal, instances: { device: 'cuda', gpuMemory: 1.5 } }).message).toMatch(/gpuMemory/);
    expect(error({ ...minimal, instances: { device: 'cuda', gpuMemory: '12 gigs' } }).message).toMatch(/12GiB/);
    expect(error({ ...minimal, instances: { device: 'cpu', gpuMemory: 0.5 } }).message).toMatch(
      /caps a CUDA device's memory, and instances.device is cpu/,
    );
  });

  it('refuses model and hook paths that leave the folder', () => {
    expect(error({ ...minimal, model: '../model.pt' }).message).toMatch(
      /model: must be a path inside the function folder/,
    );
    expect(error({ ...minimal, model: '/etc/model.pt' }).reason).toBe('model');
    expect(error({ ...minimal, hook: 'a/../../hook.ts' }).reason).toBe('hook');
  });

  it('names the field in each error', () => {
    expect(error({ ...minimal, batching: { maxQueueDelayUs: -1 } }).message).toMatch(/batching\.maxQueueDelayUs: /);
    expect(error({ ...minimal, inputs: [{ name: 'x', dtype: 'FP33', dims: [1] }] }).reason).toBe('inputs[0].dtype');
    expect(error({ ...minimal, inputs: [{ name: 'x', dtype: 'FP32', dims: [-2] }] }).reason).toBe('inputs[0].dims[0]');
    expect(error({ ...minimal, instances: { device: 'tpu' } }).reason).toBe('instances.device');
  });

  it('checks fields against each other', () => {
    expect(error({ ...minimal, batching: { preferredBatchSizes: [4] } }).message).toMatch(/needs maxBatchSize > 0/);
    expect(error({ ...minimal, maxBatchSize: 8, batching: { preferredBatchSizes: [4, 16] } }).reason).toBe(
      'batching.preferredBatchSizes[1]',
    );
    expect(error({ ...minimal, scaling: { minInstances: 5, maxInstances: 2 } }).reason).toBe('scaling.minInstances');
    expect(error({ ...minimal, batching: { priorityLevels: 2, defaultPriorityLevel: 3 } }).reason).toBe(
      'batching.defaultPriorityLevel',
    );
    expect(error({ ...minimal, instances: { count: 9 } }).reason).toBe('instances.count');
    expect(
      error({
        ...minimal,
        outputs: [
          { name: 'y', dtype: 'FP32', dims: [1] },
          { name: 'y', dtype: 'FP32', dims: [1] },
        ],
      }).reason,
    ).toBe('outputs[1].name');
    const sequence = (states: object[]) => ({
      ...minimal,
      maxBatchSize: 4,
      sequence: { controls: [{ name: 'START', kind: 'start', dtype: 'INT32' }], states },
    });
    const state = { input: 'h_in', output: 'h_out', dtype: 'FP32', dims: [8] };
    expect(parseSpec(sequence([state])).sequence?.states).toEqual([state]);
    expect(error(sequence([{ ...state, input: minimal.inputs[0]!.name }])).reason).toBe('sequence.states[0].input');
    expect(error(sequence([{ ...state, input: 'START' }])).reason).toBe('sequence.states[0].input');
    expect(error(sequence([{ ...state, output: minimal.outputs[0]!.name }])).reason).toBe('sequence.states[0].output');
    expect(error(sequence([{ ...state, dtype: 'BYTES' }])).reason).toBe('sequence.states[0].dtype');
    expect(error(sequence([{ ...state, dims: [8192, 8193] }])).reason).toBe('sequence.states[0].dims');
  });

  it('reads hearth.yaml', () => {
    const spec = parseSpecYaml(`
name: tabular-mlp
model: model.pt
maxBatchSize: 64
inputs: [{ name: x, dtype: FP32, dims: [1024] }]
outputs: [{ name: y, dtype: FP32, dims: [1024] }]
batching: { preferredBatchSizes: [16, 32], maxQueueDelayUs: 500 }
instances: { count: 2, device: cpu }
`);
    expect(spec.maxBatchSize).toBe(64);
    expect(spec.batching.preferredBatchSizes).toEqual([16, 32]);
    expect(spec.instances).toEqual({ count: 2, device: 'cpu', threads: 0 });
    expect(() => parseSpecYaml('name: [unclosed')).toThrow(/not valid YAML/);
  });

  it('keeps sdk/spec/hearth.schema.json in sync with the zod schema (npm run schema)', () => {
    const onDisk = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8'));
    expect(onDisk).toEqual(functionSpecJsonSchema());
    expect(onDisk.required).toEqual(expect.arrayContaining(['name', 'model', 'inputs', 'outputs']));
    expect(onDisk.properties.batching.properties.maxQueueDelayUs.minimum).toBe(0);
  });

  it('keeps the spec reference in docs/ in sync with the schema (npm run schema)', () => {
    const page = readFileSync(REFERENCE_FILE, 'utf8');
    expect(page).toBe(withReference(page));
    expect(specReference()).toContain('| `scaling.targetQueueDepth` | integer 1… | `8` |');
  });

  it('refuses unknown keys, naming each and the nearest valid one', () => {
    const base = {
      name: 'a',
      model: 'model.pt',
      inputs: [{ name: 'x', dtype: 'FP32', dims: [4] }],
      outputs: [{ name: 'y', dtype: 'FP32', dims: [3] }],
    };
    const error = (extra: object) => {
      try {
        parseSpec({ ...base, ...extra });
      } catch (e) {
        return (e as Error).message;
      }
      return 'parsed';
    };
    expect(error({ maxBatchSze: 8 })).toBe('invalid spec: maxBatchSze: unknown key (did you mean maxBatchSize?)');
    expect(error({ batching: { maxQueueDelay: 5 } })).toMatch(
      /batching\.maxQueueDelay: unknown key \(did you mean batching\.maxQueueDelayUs\?\)/,
    );
    // A key in the wrong place points at where it belongs.
    expect(error({ maxQueueDelayUs: 5 })).toMatch(
      /maxQueueDelayUs: unknown key \(did you mean batching\.maxQueueDelayUs\?\)/,
    );
    expect(error({ inputs: [{ name: 'x', dtype: 'FP32', dims: [4], dimz: 1 }] })).toMatch(
      /inputs\[0\]\.dimz: unknown key \(did you mean inputs\[\]\.dims\?\)/,
    );
    expect(error({ zzz: 1 })).toBe('invalid spec: zzz: unknown key');
    expect(error({})).toBe('parsed');
  });

  it('names the datatype a PyTorch, NumPy or config.pbtxt name means (float32 → FP32)', () => {
    const dtypeError = (dtype: string): string => {
      try {
        parseSpec({
          name: 'a',
          model: 'model.pt',
          inputs: [{ name: 'x', dtype, dims: [4] }],
          outputs: [{ name: 'y', dtype: 'FP32', dims: [3] }],
        });
      } catch (e) {
        return (e as Error).message;
      }
      return 'parsed';
    };
    for (const [given, meant] of [
      ['float32', 'FP32'],
      ['torch.float32', 'FP32'],
      ['fp32', 'FP32'],
      ['TYPE_INT64', 'INT64'],
      ['long', 'INT64'],
      ['float16', 'FP16'],
      ['double', 'FP64'],
      ['string', 'BYTES'],
      ['FP33', 'FP32'],
    ])
      expect(dtypeError(given!), given).toMatch(
        new RegExp(`^invalid spec: inputs\\[0\\]\\.dtype: .*expected one of .* \\(did you mean ${meant}\\?\\)$`),
      );
    expect(dtypeError('banana')).not.toMatch(/did you mean/);
  });

  it('takes the smoke request as example or exampleFile, not both, with a content type by extension', () => {
    expect(error({ ...minimal, example: { inputs: [] }, exampleFile: 'row.csv' }).message).toMatch(
      /exampleFile: give the smoke request as example \(a JSON body\) or exampleFile \(a file\), not both/,
    );
    expect(error({ ...minimal, exampleContentType: 'text/csv' }).message).toMatch(
      /exampleContentType: is the content type of exampleFile/,
    );
    expect(error({ ...minimal, exampleFile: '../secret' }).message).toMatch(/exampleFile/);
    expect(exampleFileType(parseSpec({ ...minimal, exampleFile: 'cat.JPG' }))).toBe('image/jpeg');
    expect(exampleFileType(parseSpec({ ...minimal, exampleFile: 'x.bin' }))).toBe('application/octet-stream');
    expect(
      exampleFileType(parseSpec({ ...minimal, exampleFile: 'x.bin', exampleContentType: 'application/x-npy' })),
    ).toBe('application/x-npy');
  });
});
