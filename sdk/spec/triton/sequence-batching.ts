/** Triton's `sequence_batching` block (strategy, idle time, control inputs) as a spec's `sequence`. */
import { InvalidInputError } from '../../errors.js';
import type { FunctionSpecInput } from '../function-spec.js';
import type { Fields } from './fields.js';
import { DATA_TYPES } from './fields.js';

const CONTROL_KINDS: Record<string, 'start' | 'end' | 'ready' | 'corrid'> = {
  CONTROL_SEQUENCE_START: 'start',
  CONTROL_SEQUENCE_END: 'end',
  CONTROL_SEQUENCE_READY: 'ready',
  CONTROL_SEQUENCE_CORRID: 'corrid',
};

/** sequence_batching: strategy, idle time, control inputs, implicit state. */
export function readSequenceBatching(f: Fields): NonNullable<FunctionSpecInput['sequence']> {
  const out: NonNullable<FunctionSpecInput['sequence']> = { controls: [], states: [] };
  const idle = f.number('max_sequence_idle_microseconds');
  if (idle !== undefined && idle > 0) out.maxSequenceIdleUs = idle;
  for (const input of f.messages('control_input')) {
    const name = input.string('name');
    if (!name) throw new InvalidInputError(`config.pbtxt: ${input.path('name')} is required`);
    for (const control of input.messages('control')) {
      const kindName = control.enumValue('kind') ?? 'CONTROL_SEQUENCE_START';
      const kind = CONTROL_KINDS[kindName];
      if (!kind)
        throw new InvalidInputError(`config.pbtxt: ${control.path('kind')} ${kindName} is not supported`, {
          reason: control.path('kind'),
        });
      const int32 = control.numbers('int32_false_true');
      const fp32 = control.numbers('fp32_false_true');
      const bools = control.all('bool_false_true').map((v) => (v === true ? 1 : 0));
      const dataType = control.enumValue('data_type');
      control.done();
      if (kind === 'corrid') {
        const dtype = dataType === undefined ? undefined : DATA_TYPES[dataType];
        if (dtype !== 'INT64' && dtype !== 'INT32') {
          throw new InvalidInputError(
            `config.pbtxt: ${control.path('data_type')} of a CORRID control must be TYPE_INT64 or TYPE_INT32 (TorchScript has no unsigned 64-bit tensors, as in Triton's PyTorch backend)`,
            { reason: control.path('data_type') },
          );
        }
        out.controls!.push({ name, kind, dtype });
      } else {
        const [dtype, values] = int32.length
          ? (['INT32', int32] as const)
          : fp32.length
            ? (['FP32', fp32] as const)
            : bools.length
              ? (['BOOL', bools] as const)
              : ([undefined, []] as const);
        if (!dtype || values.length !== 2)
          throw new InvalidInputError(
            `config.pbtxt: ${control.path('int32_false_true')} (or fp32_/bool_false_true) must give the false and true values`,
            { reason: control.path('int32_false_true') },
          );
        out.controls!.push({ name, kind, dtype, values: [values[0]!, values[1]!] });
      }
    }
    input.done();
  }
  const direct = f.message('direct');
  const oldest = f.message('oldest');
  if (oldest) {
    out.strategy = 'oldest';
    const candidates = oldest.number('max_candidate_sequences');
    if (candidates) out.maxCandidateSequences = candidates;
    out.maxQueueDelayUs = oldest.number('max_queue_delay_microseconds') ?? 0;
    oldest.numbers('preferred_batch_size');
    oldest.bool('preserve_ordering');
    oldest.done();
  } else {
    out.strategy = 'direct';
    out.maxQueueDelayUs = direct?.number('max_queue_delay_microseconds') ?? 0;
    direct?.number('minimum_slot_utilization');
    direct?.done();
  }
  for (const state of f.messages('state')) out.states!.push(readState(state));
  f.refuseUnless('iterative_sequence', (v) => v === false, 'iterative sequences are not supported by Hearth');
  f.done();
  return out;
}

/**
 * One implicit state: its input and output names, datatype and dims. It starts as zeros (Triton's
 * default, and `initial_state { zero_data: true }`); an initial state from a data_file is refused,
 * as is a shape that grows (use_growable_memory, CUDA only in Triton). use_same_buffer_for_input_output
 * is a memory hint Hearth has no use for: the node keeps the state between forwards, not in place.
 */
function readState(state: Fields): NonNullable<NonNullable<FunctionSpecInput['sequence']>['states']>[number] {
  const input = state.string('input_name');
  const output = state.string('output_name');
  if (!input || !output)
    throw new InvalidInputError(`config.pbtxt: ${state.path('input_name')} and output_name are required`, {
      reason: state.path('input_name'),
    });
  const typeName = state.enumValue('data_type');
  const dtype = typeName === undefined ? undefined : DATA_TYPES[typeName];
  if (!dtype || dtype === 'BYTES')
    throw new InvalidInputError(
      `config.pbtxt: ${state.path('data_type')} ${typeName ?? '(none)'} cannot be a state: give a numeric TYPE_*`,
      { reason: state.path('data_type') },
    );
  const dims = state.numbers('dims');
  if (dims.length === 0 || dims.some((d) => d < 1))
    throw new InvalidInputError(
      `config.pbtxt: ${state.path('dims')} [${dims.join(', ')}] must be fixed (a state starts as zeros of its shape; Hearth keeps no growing state)`,
      { reason: state.path('dims') },
    );
  for (const initial of state.messages('initial_state')) {
    if (initial.string('data_file') !== undefined)
      throw new InvalidInputError(
        `config.pbtxt: ${initial.path('data_file')} is not supported: a state starts as zeros (zero_data)`,
        { reason: initial.path('data_file') },
      );
    initial.bool('zero_data');
    initial.string('name');
    initial.enumValue('data_type');
    const initialDims = initial.numbers('dims');
    if (initialDims.length > 0 && initialDims.join(',') !== dims.join(','))
      throw new InvalidInputError(
        `config.pbtxt: ${initial.path('dims')} [${initialDims.join(', ')}] must be the state's dims [${dims.join(', ')}]`,
        { reason: initial.path('dims') },
      );
    initial.done();
  }
  state.bool('use_same_buffer_for_input_output');
  state.refuseUnless('use_growable_memory', (v) => v === false, 'a growing state is not supported by Hearth');
  state.done();
  return { input, output, dtype, dims };
}
