/** Triton's `dynamic_batching` block (preferred sizes, delay, priorities, queue policy) as a spec's `batching`. */
import { InvalidInputError } from '../../errors.js';
import type { FunctionSpecInput } from '../function-spec.js';
import type { Fields } from './fields.js';

/** dynamic_batching, if the config has it: the batcher's sizes and delay, priority levels, and the default queue policy. */
export function readDynamicBatching(top: Fields): FunctionSpecInput['batching'] {
  const dynamic = top.message('dynamic_batching');
  if (!dynamic) return undefined;
  const policy = dynamic.message('default_queue_policy');
  const levels = dynamic.number('priority_levels') ?? 0;
  const defaultLevel = dynamic.number('default_priority_level') ?? 0;
  dynamic.bool('preserve_ordering'); // responses are per request: order is always preserved per caller
  const batching: NonNullable<FunctionSpecInput['batching']> = {
    preferredBatchSizes: dynamic.numbers('preferred_batch_size'),
    maxQueueDelayUs: dynamic.number('max_queue_delay_microseconds') ?? 0,
    priorityLevels: Math.max(1, levels),
    defaultPriorityLevel: Math.max(1, defaultLevel),
  };
  if (policy) {
    const action = policy.enumValue('timeout_action') ?? 'REJECT';
    if (action !== 'REJECT') {
      throw new InvalidInputError(
        `config.pbtxt: ${policy.path('timeout_action')} ${action} is not supported; Hearth rejects requests whose timeout passes (REJECT)`,
        { reason: policy.path('timeout_action') },
      );
    }
    policy.bool('allow_timeout_override'); // a request's own deadline always applies
    batching.defaultTimeoutUs = policy.number('default_timeout_microseconds') ?? 0;
    batching.maxQueueSize = policy.number('max_queue_size') ?? 0;
    policy.done();
  }
  dynamic.done();
  return batching;
}
