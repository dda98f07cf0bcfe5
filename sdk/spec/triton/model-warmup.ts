/** Triton's `model_warmup` samples (zero or random data, no data files) as a spec's `warmup`. */
import { InvalidInputError } from '../../errors.js';
import type { DType } from '../../tensor.js';
import type { FunctionSpecInput } from '../function-spec.js';
import type { Fields } from './fields.js';
import { DATA_TYPES } from './fields.js';

/** The warm-up samples, in the config's order (none when it has none). */
export function readModelWarmup(top: Fields): NonNullable<FunctionSpecInput['warmup']> {
  return top.messages('model_warmup').map((w) => {
    const inputs: Record<string, { dtype: DType; dims: number[]; fill: 'zero' | 'random' }> = {};
    for (const entry of w.messages('inputs')) {
      const key = entry.string('key');
      const value = entry.message('value');
      entry.done();
      if (!key || !value) throw new InvalidInputError(`config.pbtxt: ${entry.path('key')} and value are required`);
      const dataType = value.enumValue('data_type');
      const dtype = dataType === undefined ? undefined : DATA_TYPES[dataType];
      if (!dtype)
        throw new InvalidInputError(
          `config.pbtxt: ${value.path('data_type')} must be one of ${Object.keys(DATA_TYPES).join(', ')}`,
        );
      const dims = value.numbers('dims');
      const zero = value.bool('zero_data');
      const random = value.bool('random_data');
      value.refuseUnless(
        'input_data_file',
        () => false,
        'warm-up data files are not supported by Hearth; use zero_data or random_data',
      );
      value.done();
      inputs[key] = { dtype, dims, fill: random ? 'random' : zero === false ? 'random' : 'zero' };
    }
    const sample = {
      name: w.string('name') ?? 'warmup',
      batchSize: Math.max(1, w.number('batch_size') ?? 1),
      count: Math.max(1, w.number('count') ?? 1),
      inputs,
    };
    w.done();
    return sample;
  });
}
