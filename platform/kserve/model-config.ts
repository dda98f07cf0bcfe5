/**
 * Triton's model configuration extension: a version's spec as the ModelConfig message Triton
 * returns (HTTP `GET /v2/models/{m}/config` as JSON, gRPC `ModelConfig`), with the fields Triton
 * fills in itself (backend, platform, version policy, instance group names, optimization
 * defaults). Field names are the .proto's; int64 fields are JSON numbers, as Triton prints them.
 */
import { basename } from 'node:path';

import type { FunctionSpec, InputSpec, OutputSpec, SequenceSpec } from '../../sdk/spec/function-spec.js';
import { DATA_TYPES } from '../../sdk/spec/triton/index.js';
import type { DType } from '../../sdk/tensor.js';

const TYPE_NAMES = Object.fromEntries(Object.entries(DATA_TYPES).map(([k, v]) => [v, k])) as Record<DType, string>;

/** KIND_CPU, KIND_GPU (with its index) or KIND_MODEL, for the device the spec names on this node. */
function instanceKind(device: string, cudaAvailable: boolean): { kind: string; gpus: number[] } {
  if (device === 'cpu') return { kind: 'KIND_CPU', gpus: [] };
  if (device === 'model') return { kind: 'KIND_MODEL', gpus: [] };
  if (device === 'auto' && !cudaAvailable) return { kind: 'KIND_CPU', gpus: [] };
  const index = /^cuda:(\d+)$/.exec(device)?.[1];
  return { kind: 'KIND_GPU', gpus: [index === undefined ? 0 : Number(index)] };
}

function common(t: InputSpec | OutputSpec): object {
  return {
    name: t.name,
    data_type: TYPE_NAMES[t.dtype],
    dims: t.dims,
    ...(t.reshape ? { reshape: { shape: t.reshape } } : {}),
    is_shape_tensor: false,
    is_non_linear_format_io: false,
  };
}

const input = (t: InputSpec) => ({
  ...common(t),
  format: t.format ?? 'FORMAT_NONE',
  allow_ragged_batch: false,
  optional: false,
});
const output = (t: OutputSpec) => ({ ...common(t), label_filename: t.labelFile ?? '' });

export function modelConfig(spec: FunctionSpec, options: { cudaAvailable: boolean }): Record<string, unknown> {
  const { kind, gpus } = instanceKind(spec.instances.device, options.cudaAvailable);
  const b = spec.batching;
  return {
    name: spec.name,
    platform: 'pytorch_libtorch',
    backend: 'pytorch',
    runtime: '',
    version_policy: { latest: { num_versions: 1 } },
    max_batch_size: spec.maxBatchSize,
    input: spec.inputs.map(input),
    output: spec.outputs.map(output),
    batch_input: [],
    batch_output: [],
    optimization: {
      priority: 'PRIORITY_DEFAULT',
      input_pinned_memory: { enable: true },
      output_pinned_memory: { enable: true },
      gather_kernel_buffer_threshold: 0,
      eager_batching: false,
    },
    // A sequence model is batched by the sequence batcher; every other model with a batch
    // dimension by the dynamic batcher.
    ...(spec.sequence ? { sequence_batching: sequenceBatching(spec.sequence) } : {}),
    ...(spec.maxBatchSize > 0 && !spec.sequence
      ? {
          dynamic_batching: {
            preferred_batch_size: b.preferredBatchSizes,
            max_queue_delay_microseconds: b.maxQueueDelayUs,
            preserve_ordering: false,
            priority_levels: b.priorityLevels > 1 ? b.priorityLevels : 0,
            default_priority_level: b.priorityLevels > 1 ? b.defaultPriorityLevel : 0,
            default_queue_policy: {
              timeout_action: 'REJECT',
              default_timeout_microseconds: b.defaultTimeoutUs,
              allow_timeout_override: false,
              max_queue_size: b.maxQueueSize,
            },
            priority_queue_policy: {},
          },
        }
      : {}),
    instance_group: [
      {
        name: `${spec.name}_0`,
        kind,
        count: spec.instances.count,
        gpus,
        secondary_devices: [],
        profile: [],
        passive: false,
        host_policy: '',
      },
    ],
    default_model_filename: basename(spec.model),
    cc_model_filenames: {},
    metric_tags: {},
    parameters: Object.fromEntries(Object.entries(spec.parameters ?? {}).map(([k, v]) => [k, { string_value: v }])),
    model_warmup: (spec.warmup ?? []).map((w) => ({
      name: w.name,
      batch_size: w.batchSize,
      count: w.count,
      inputs: Object.fromEntries(
        Object.entries(w.inputs).map(([name, i]) => [
          name,
          {
            data_type: TYPE_NAMES[i.dtype],
            dims: i.dims,
            ...(i.fill === 'zero' ? { zero_data: true } : { random_data: true }),
          },
        ]),
      ),
    })),
  };
}

const CONTROL_KINDS = {
  start: 'CONTROL_SEQUENCE_START',
  end: 'CONTROL_SEQUENCE_END',
  ready: 'CONTROL_SEQUENCE_READY',
  corrid: 'CONTROL_SEQUENCE_CORRID',
} as const;

function sequenceBatching(s: SequenceSpec): object {
  return {
    max_sequence_idle_microseconds: s.maxSequenceIdleUs,
    control_input: s.controls.map((c) => ({
      name: c.name,
      control: [
        {
          kind: CONTROL_KINDS[c.kind],
          ...(c.kind === 'corrid'
            ? { data_type: TYPE_NAMES[c.dtype] }
            : c.dtype === 'FP32'
              ? { fp32_false_true: c.values }
              : c.dtype === 'BOOL'
                ? { bool_false_true: c.values.map(Boolean) }
                : { int32_false_true: c.values }),
        },
      ],
    })),
    state: s.states.map((st) => ({
      input_name: st.input,
      output_name: st.output,
      data_type: TYPE_NAMES[st.dtype],
      dims: st.dims,
      initial_state: [],
      use_same_buffer_for_input_output: false,
      use_growable_memory: false,
    })),
    ...(s.strategy === 'oldest'
      ? {
          oldest: {
            max_candidate_sequences: s.maxCandidateSequences ?? 0,
            preferred_batch_size: [],
            max_queue_delay_microseconds: s.maxQueueDelayUs,
            preserve_ordering: false,
          },
        }
      : { direct: { max_queue_delay_microseconds: s.maxQueueDelayUs, minimum_slot_utilization: 0 } }),
  };
}
