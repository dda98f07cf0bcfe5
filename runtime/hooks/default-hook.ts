/**
 * The hook of a function that has none: JSON `{"inputs": {name: nested array}}` in,
 * `{"outputs": {name: nested array}}` out, dtypes from the spec. With a batch dimension the nested
 * arrays carry it first.
 */
import type { Hook } from '../../sdk/hook.js';
import type { TensorsByName } from '../../sdk/tensor.js';
import { tensorFromJson, tensorToJson } from '../../sdk/tensor-json.js';

export class DefaultHookInputError extends Error {}

export const defaultHook: Hook = {
  name: 'default',
  pre(request, context) {
    if (request.kind !== 'json')
      throw new DefaultHookInputError(
        `send JSON {"inputs": {...}} (got ${request.contentType || 'no content type'}), or give the function a hook`,
      );
    const inputs = (request.json as { inputs?: unknown } | null)?.inputs;
    if (typeof inputs !== 'object' || inputs === null || Array.isArray(inputs)) {
      throw new DefaultHookInputError('the body must be {"inputs": {"<name>": <nested array>, ...}}');
    }
    const tensors: TensorsByName = {};
    for (const spec of context.inputs) {
      const value = (inputs as Record<string, unknown>)[spec.name];
      if (value === undefined) throw new DefaultHookInputError(`missing input "${spec.name}"`);
      try {
        tensors[spec.name] = tensorFromJson(spec.dtype, value, undefined, `inputs.${spec.name}`);
      } catch (error) {
        throw new DefaultHookInputError((error as Error).message);
      }
    }
    for (const name of Object.keys(inputs)) {
      if (!context.inputs.some((s) => s.name === name)) throw new DefaultHookInputError(`unexpected input "${name}"`);
    }
    return tensors;
  },
  post(outputs) {
    const body: Record<string, unknown> = {};
    for (const [name, t] of Object.entries(outputs)) body[name] = tensorToJson(t);
    return { outputs: body };
  },
};
