/** Triton's `instance_group` (one group: a count of instances on one device kind) as a spec's instances and scaling. */
import { InvalidInputError } from '../../errors.js';
import type { FunctionSpecInput } from '../function-spec.js';
import type { Fields } from './fields.js';

/** The instance group, if the config has one, applied to the spec (its autoscaler's ceiling at least 4). */
export function applyInstanceGroup(top: Fields, spec: FunctionSpecInput): void {
  const groups = top.messages('instance_group');
  if (groups.length > 1) {
    throw new InvalidInputError(
      'config.pbtxt: instance_group has more than one group; Hearth places a pool on one device kind',
      { reason: 'instance_group' },
    );
  }
  const group = groups[0];
  if (!group) return;
  const count = group.number('count') ?? 1;
  const kind = group.enumValue('kind') ?? 'KIND_AUTO';
  const gpus = group.numbers('gpus');
  group.string('name');
  if (gpus.length > 1) {
    throw new InvalidInputError(
      `config.pbtxt: ${group.path('gpus')} lists ${gpus.length} GPUs; Hearth places a pool's instances on one device`,
      { reason: group.path('gpus') },
    );
  }
  let device: string;
  if (kind === 'KIND_CPU') device = 'cpu';
  else if (kind === 'KIND_GPU') device = gpus.length ? `cuda:${gpus[0]}` : 'cuda';
  else if (kind === 'KIND_AUTO') device = gpus.length ? `cuda:${gpus[0]}` : 'auto';
  else if (kind === 'KIND_MODEL') device = 'model';
  else
    throw new InvalidInputError(
      `config.pbtxt: ${group.path('kind')} ${kind} is not supported; use KIND_CPU, KIND_GPU, KIND_AUTO or KIND_MODEL`,
      { reason: group.path('kind') },
    );
  group.done();
  spec.instances = { count, device };
  spec.scaling = { maxInstances: Math.max(4, count) };
}
