import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { InvalidInputError } from '../../../sdk/errors.js';
import { loadTritonModelFolder, tritonConfigToSpec } from '../../../sdk/spec/index.js';

const root = await mkdtemp(join(tmpdir(), 'hearth-triton-'));
afterAll(() => rm(root, { recursive: true, force: true }));

/** A model folder as Triton's repository layout has it: config.pbtxt and numbered versions. */
async function folder(
  name: string,
  config: string,
  versions: Record<string, string> = { '1': 'model.pt' },
): Promise<string> {
  const dir = join(root, name);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'config.pbtxt'), config);
  for (const [version, file] of Object.entries(versions)) {
    await mkdir(join(dir, version), { recursive: true });
    await writeFile(join(dir, version, file), 'not really a model');
  }
  return dir;
}

const RESNET = `
name: "resnet50"
platform: "pytorch_libtorch"
max_batch_size: 32
input [
  {
    name: "INPUT__0"
    data_type: TYPE_FP32
    format: FORMAT_NCHW
    dims: [ 3, 224, 224 ]
  }
]
output [
  {
    name: "OUTPUT__0"
    data_type: TYPE_FP32
    dims: [ 1000 ]
  }
]
instance_group [
  {
    count: 2
    kind: KIND_CPU
  }
]
dynamic_batching {
  preferred_batch_size: [ 8, 16 ]
  max_queue_delay_microseconds: 100
  default_queue_policy {
    timeout_action: REJECT
    default_timeout_microseconds: 50000
    max_queue_size: 128
  }
}
`;

function refused(text: string): InvalidInputError {
  try {
    tritonConfigToSpec(text, { folderName: 'm' });
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidInputError);
    return e as InvalidInputError;
  }
  throw new Error('expected the config to be refused');
}

describe('Triton model folders', () => {
  it('imports a ResNet-50 folder with two instances and dynamic batching', async () => {
    const dir = await folder('resnet50', RESNET, { '1': 'model.pt', '3': 'model.pt', '2': 'model.pt' });
    const { spec, version } = await loadTritonModelFolder(dir);
    expect(version).toBe(3);
    expect(spec).toMatchObject({
      name: 'resnet50',
      model: '3/model.pt',
      maxBatchSize: 32,
      inputs: [{ name: 'INPUT__0', dtype: 'FP32', dims: [3, 224, 224] }],
      outputs: [{ name: 'OUTPUT__0', dtype: 'FP32', dims: [1000] }],
      instances: { count: 2, device: 'cpu', threads: 0 },
      batching: {
        preferredBatchSizes: [8, 16],
        maxQueueDelayUs: 100,
        defaultTimeoutUs: 50000,
        maxQueueSize: 128,
        priorityLevels: 1,
      },
    });
  });

  it('takes the folder name when the config has none, and a GPU group with its index', async () => {
    const dir = await folder(
      'text-clf',
      `
      backend: "pytorch"
      max_batch_size: 0
      input [ { name: "INPUT__0" data_type: TYPE_INT64 dims: [ -1 ] }, { name: "INPUT__1" data_type: TYPE_BOOL dims: [ -1 ] } ]
      output [ { name: "OUTPUT__0" data_type: TYPE_FP16 dims: [ 2 ] } ]
      instance_group [ { kind: KIND_GPU gpus: [ 1 ] } ]
      dynamic_batching { priority_levels: 3 default_priority_level: 2 }
    `,
    );
    const { spec } = await loadTritonModelFolder(dir);
    expect(spec.name).toBe('text-clf');
    expect(spec.maxBatchSize).toBe(0);
    expect(spec.inputs.map((i) => i.dtype)).toEqual(['INT64', 'BOOL']);
    expect(spec.outputs[0]!.dtype).toBe('FP16');
    expect(spec.instances.device).toBe('cuda:1');
    expect(spec.batching.priorityLevels).toBe(3);
    expect(spec.batching.defaultPriorityLevel).toBe(2);
  });

  it('uses default_model_filename and skips versions without the file', async () => {
    const dir = await folder(
      'custom',
      `
      name: "custom"
      platform: "pytorch_libtorch"
      default_model_filename: "net.pt"
      input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
      output [ { name: "y" data_type: TYPE_FP32 dims: [ 3 ] } ]
    `,
      { '1': 'net.pt', '2': 'other.pt' },
    );
    const { spec } = await loadTritonModelFolder(dir);
    expect(spec.model).toBe('1/net.pt');
  });

  it('refuses a folder without a model file in any version', async () => {
    const dir = await folder(
      'empty',
      'platform: "pytorch_libtorch" input [ { name: "x" data_type: TYPE_FP32 dims: [1] } ] output [ { name: "y" data_type: TYPE_FP32 dims: [1] } ]',
      {},
    );
    await expect(loadTritonModelFolder(dir)).rejects.toThrow(/has no <version>\/model.pt/);
  });

  it.each([
    ['platform: "onnxruntime_onnx"', 'platform'],
    ['parameters { key: "INFERENCE_MODE" value: { string_value: "maybe" } }', 'INFERENCE_MODE'],
    [
      'sequence_batching { state [ { input_name: "a" output_name: "b" dims: [ 1 ] } ] }',
      'sequence_batching.state[0].data_type',
    ],
    [
      'sequence_batching { state [ { input_name: "a" output_name: "b" data_type: TYPE_STRING dims: [ 1 ] } ] }',
      'sequence_batching.state[0].data_type',
    ],
    [
      'sequence_batching { state [ { input_name: "a" output_name: "b" data_type: TYPE_FP32 dims: [ -1 ] } ] }',
      'sequence_batching.state[0].dims',
    ],
    [
      'sequence_batching { state [ { input_name: "a" output_name: "b" data_type: TYPE_FP32 dims: [ 2 ] initial_state [ { data_type: TYPE_FP32 dims: [ 2 ] data_file: "init" } ] } ] }',
      'initial_state[0].data_file',
    ],
    [
      'sequence_batching { state [ { input_name: "a" output_name: "b" data_type: TYPE_FP32 dims: [ 2 ] use_growable_memory: true } ] }',
      'use_growable_memory',
    ],
    [
      'sequence_batching { control_input [ { name: "C" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] } ] }',
      'data_type',
    ],
    ['model_transaction_policy { decoupled: true }', 'model_transaction_policy'],
    ['model_warmup [ { name: "w" } ]', 'warmup[0].inputs'],
    [
      'model_warmup [ { name: "w" inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 4 ] input_data_file: "raw" } } } ]',
      'input_data_file',
    ],
    ['instance_group [ { kind: KIND_GPU gpus: [0, 1] } ]', 'instance_group[0].gpus'],
    ['instance_group [ { count: 1 }, { count: 1 } ]', 'instance_group'],
    [
      'dynamic_batching { default_queue_policy { timeout_action: DELAY } }',
      'dynamic_batching.default_queue_policy.timeout_action',
    ],
    [
      'dynamic_batching { priority_queue_policy { key: 1 value { max_queue_size: 2 } } }',
      'dynamic_batching.priority_queue_policy',
    ],
  ])('refuses %s, naming the field', (extra, field) => {
    const base =
      'input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]\noutput [ { name: "y" data_type: TYPE_FP32 dims: [ 3 ] } ]';
    const text = extra.startsWith('platform') ? `${extra}\n${base}` : `platform: "pytorch_libtorch"\n${base}\n${extra}`;
    const error = refused(text);
    expect(error.message).toContain(field);
  });

  it('refuses input fields Hearth cannot honour, naming the input', () => {
    expect(
      refused(
        'platform: "pytorch_libtorch" input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] reshape: { shape: [ 3, 2 ] } } ] output [ { name: "y" data_type: TYPE_FP32 dims: [ 1 ] } ]',
      ).message,
    ).toMatch(/inputs\[0\]\.reshape: \[3, 2\] holds 6 element\(s\) but dims \[4\] hold 4/);
    expect(
      refused(
        'platform: "pytorch_libtorch" input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] optional: true } ] output [ { name: "y" data_type: TYPE_FP32 dims: [ 1 ] } ]',
      ).message,
    ).toContain('input[0].optional');
    expect(
      refused(
        'platform: "pytorch_libtorch" input [ { name: "x" data_type: TYPE_FOO dims: [ 4 ] } ] output [ { name: "y" data_type: TYPE_FP32 dims: [ 1 ] } ]',
      ).message,
    ).toContain('input[0].data_type');
  });

  it('takes model names as Triton does (case, "_", "." and "-"), and output names that start with a digit', () => {
    const spec = tritonConfigToSpec(
      'name: "ResNet_50.v2-a" platform: "pytorch_libtorch" input [ { name: "x" data_type: TYPE_FP32 dims: [1] } ] output [ { name: "1634__1" data_type: TYPE_FP32 dims: [1] } ]',
    );
    expect(spec.name).toBe('ResNet_50.v2-a');
    expect(spec.outputs[0]!.name).toBe('1634__1');
  });

  it.each([
    '..',
    '.hidden',
    'a/b',
    'a%2Fb',
    '-rf',
    'a b',
    '',
  ])('refuses the model name %j, which could never be a folder or key', (name) => {
    expect(
      refused(
        `name: "${name}" platform: "pytorch_libtorch" input [ { name: "x" data_type: TYPE_FP32 dims: [1] } ] output [ { name: "y" data_type: TYPE_FP32 dims: [1] } ]`,
      ).message,
    ).toMatch(/name/);
  });

  it('fills a missing platform, as Triton picks the PyTorch backend for a .pt', () => {
    const spec = tritonConfigToSpec(
      'input [ { name: "x" data_type: TYPE_FP32 dims: [1] } ] output [ { name: "y" data_type: TYPE_FP32 dims: [1] } ]',
      { folderName: 'm' },
    );
    expect(spec.name).toBe('m');
  });

  it("accepts optimization and unknown parameters with notes naming what has no effect, and applies the PyTorch backend's parameters", () => {
    const notes: string[] = [];
    const spec = tritonConfigToSpec(
      `platform: "pytorch_libtorch"
      input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "y" data_type: TYPE_FP32 dims: [ 3 ] } ]
      optimization { cuda { graphs: true } input_pinned_memory { enable: true } }
      parameters { key: "INFERENCE_MODE" value: { string_value: "false" } }
      parameters { key: "DISABLE_OPTIMIZED_EXECUTION" value: { string_value: "true" } }
      parameters { key: "ENABLE_JIT_PROFILING" value: { string_value: "false" } }
      parameters { key: "INTRA_OP_THREAD_COUNT" value: { string_value: "1" } }
      parameters { key: "ENABLE_WEIGHT_SHARING" value: { string_value: "true" } }
      parameters { key: "MY_OWN" value: { string_value: "42" } }
      instance_group [ { count: 2 kind: KIND_MODEL } ]`,
      { folderName: 'm', notes },
    );
    expect(spec.execution).toEqual({ inferenceMode: false, optimizedExecution: false, jitProfiling: false });
    expect(spec.instances).toMatchObject({ threads: 1, device: 'model', count: 2 });
    expect(spec.parameters).toMatchObject({ MY_OWN: '42', INFERENCE_MODE: 'false' });
    expect(notes.join('\n')).toMatch(/optimization\.cuda, optimization\.input_pinned_memory has no effect/);
    expect(notes.join('\n')).toMatch(/ENABLE_WEIGHT_SHARING"\] has no effect/);
    expect(notes.join('\n')).toMatch(/MY_OWN"\] is not read by Hearth; kept/);
  });

  it('reads sequence_batching: strategy, idle time and control inputs with their values', () => {
    const spec = tritonConfigToSpec(
      `platform: "pytorch_libtorch" max_batch_size: 2
      input [ { name: "x" data_type: TYPE_FP32 dims: [ 1 ] } ] output [ { name: "y" data_type: TYPE_FP32 dims: [ 1 ] } ]
      sequence_batching {
        max_sequence_idle_microseconds: 3000000
        control_input [
          { name: "S" control [ { kind: CONTROL_SEQUENCE_START fp32_false_true: [ 0, 1 ] } ] },
          { name: "R" control [ { kind: CONTROL_SEQUENCE_READY bool_false_true: [ false, true ] } ] },
          { name: "C" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_INT64 } ] }
        ]
        oldest { max_candidate_sequences: 6 max_queue_delay_microseconds: 100 }
      }`,
      { folderName: 'm' },
    );
    expect(spec.sequence).toEqual({
      strategy: 'oldest',
      maxSequenceIdleUs: 3000000,
      maxQueueDelayUs: 100,
      maxCandidateSequences: 6,
      controls: [
        { name: 'S', kind: 'start', dtype: 'FP32', values: [0, 1] },
        { name: 'R', kind: 'ready', dtype: 'BOOL', values: [0, 1] },
        { name: 'C', kind: 'corrid', dtype: 'INT64', values: [0, 1] },
      ],
      states: [],
    });
  });

  it('reads implicit state (sequence_batching.state) with a zero_data initial state', () => {
    const spec = tritonConfigToSpec(
      `platform: "pytorch_libtorch" max_batch_size: 4
      input [ { name: "x" data_type: TYPE_FP32 dims: [ 1 ] } ] output [ { name: "y" data_type: TYPE_FP32 dims: [ 1 ] } ]
      sequence_batching {
        state [
          { input_name: "h_in" output_name: "h_out" data_type: TYPE_FP32 dims: [ 2, 8 ]
            initial_state [ { data_type: TYPE_FP32 dims: [ 2, 8 ] zero_data: true name: "zeros" } ]
            use_same_buffer_for_input_output: true },
          { input_name: "n_in" output_name: "n_out" data_type: TYPE_INT64 dims: [ 1 ] }
        ]
      }`,
      { folderName: 'm' },
    );
    expect(spec.sequence?.states).toEqual([
      { input: 'h_in', output: 'h_out', dtype: 'FP32', dims: [2, 8] },
      { input: 'n_in', output: 'n_out', dtype: 'INT64', dims: [1] },
    ]);
  });

  it('reads reshape, label_filename and a version folder holding one .pt (seed layout), saying so', async () => {
    const dir = await folder(
      'resnet50_pt',
      `
      name: "resnet50_pt"
      platform: "pytorch_libtorch"
      max_batch_size: 8
      input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 12 ] reshape: { shape: [ 3, 2, 2 ] } } ]
      output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 3 ] label_filename: "labels.txt" } ]
    `,
      { '1': 'resnet50.pt' },
    );
    await writeFile(join(dir, 'labels.txt'), 'cat\ndog\nbird\n');
    const { spec, notes } = await loadTritonModelFolder(dir);
    expect(spec.model).toBe('1/resnet50.pt');
    expect(spec.inputs[0]!.reshape).toEqual([3, 2, 2]);
    expect(spec.outputs[0]!).toMatchObject({ labelFile: 'labels.txt', labels: ['cat', 'dog', 'bird'] });
    expect(notes.join('\n')).toMatch(/serving 1\/resnet50.pt: the only .pt file in 1\//);
  });

  it('refuses a label_filename outside the folder', async () => {
    const dir = await folder(
      'labels-out',
      `platform: "pytorch_libtorch"
      input [ { name: "x" data_type: TYPE_FP32 dims: [ 1 ] } ] output [ { name: "y" data_type: TYPE_FP32 dims: [ 1 ] label_filename: "../../etc/passwd" } ]`,
    );
    await expect(loadTritonModelFolder(dir)).rejects.toThrow(/must name a file inside the model folder/);
  });

  it('refuses a label_filename that is a symbolic link out of the folder, and follows one that stays inside', async () => {
    const secret = join(await mkdtemp(join(tmpdir(), 'hearth-secret-')), 'id_rsa');
    await writeFile(secret, 'PRIVATE KEY');
    const config = `platform: "pytorch_libtorch"
      input [ { name: "x" data_type: TYPE_FP32 dims: [ 1 ] } ] output [ { name: "y" data_type: TYPE_FP32 dims: [ 2 ] label_filename: "labels.txt" } ]`;
    const out = await folder('labels-link-out', config, { '1': 'model.pt' });
    await symlink(secret, join(out, 'labels.txt'));
    await expect(loadTritonModelFolder(out)).rejects.toThrow(/is a symbolic link to .*id_rsa, outside the folder/);
    const within = await folder('labels-link-in', config, { '1': 'model.pt' });
    await writeFile(join(within, 'names.txt'), 'a\nb\n');
    await symlink('names.txt', join(within, 'labels.txt'));
    expect((await loadTritonModelFolder(within)).spec.outputs[0]!.labels).toEqual(['a', 'b']);
  });

  it.each([
    ['version_policy { latest { num_versions: 1 } }', 3],
    ['version_policy { specific { versions: [ 2 ] } }', 2],
    ['version_policy { all { } }', 'versions 3, 2, 1'],
    ['version_policy { latest { num_versions: 2 } }', 'versions 3, 2'],
    ['version_policy { specific { versions: [ 7 ] } }', 'serves none'],
  ])('honours %s over versions 1, 2, 3 (one version per deploy)', async (policy, expected) => {
    const dir = await folder(
      `vp-${Math.random().toString(36).slice(2)}`,
      `platform: "pytorch_libtorch"
      input [ { name: "x" data_type: TYPE_FP32 dims: [ 1 ] } ] output [ { name: "y" data_type: TYPE_FP32 dims: [ 1 ] } ]
      ${policy}`,
      { '1': 'model.pt', '2': 'model.pt', '3': 'model.pt' },
    );
    if (typeof expected === 'number') expect((await loadTritonModelFolder(dir)).version).toBe(expected);
    else await expect(loadTritonModelFolder(dir)).rejects.toThrow(expected);
  });

  it('refuses preferred sizes above max_batch_size through the spec rules', () => {
    expect(
      refused(
        'platform: "pytorch_libtorch" max_batch_size: 4 input [ { name: "x" data_type: TYPE_FP32 dims: [1] } ] output [ { name: "y" data_type: TYPE_FP32 dims: [1] } ] dynamic_batching { preferred_batch_size: [ 8 ] }',
      ).message,
    ).toMatch(/batching\.preferredBatchSizes\[0\]: 8 is larger than maxBatchSize/);
  });
});
