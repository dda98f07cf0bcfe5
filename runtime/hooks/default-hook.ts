/**
 * The hook of a function that has none: JSON `{"inputs": {name: nested array}}` in,
 * `{"outputs": {name: nested array}}` out, dtypes from the spec. With a batch dimension the nested
 * arrays carry it first. Its JSON stops at `maxResponseBytes` (limits.maxResponseMb) before the
 * rest of the text is made.
 */
import type { Hook } from '../../sdk/hook.js';
import { binaryResponse } from '../../sdk/hook.js';
import type { TensorsByName } from '../../sdk/tensor.js';
import { JsonBudget, JsonTooLargeError, tensorFromJson, tensorJsonText } from '../../sdk/tensor-json.js';

const encoder = new TextEncoder();

export class DefaultHookInputError extends Error {}

export const defaultHook = (maxResponseBytes: number): Hook => ({
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
    // The JSON made as text (tensorJsonText): JSON.stringify of nested arrays of numbers took twice as long.
    const budget = new JsonBudget(maxResponseBytes);
    try {
      const fields = Object.entries(outputs).map(
        ([name, t]) => `${JSON.stringify(name)}:${tensorJsonText(t, t.shape, budget)}`,
      );
      return binaryResponse(encoder.encode(`{"outputs":{${fields.join(',')}}}`), 'application/json');
    } catch (error) {
      if (!(error instanceof JsonTooLargeError)) throw error;
      throw new Error(`the outputs as JSON would be over its limit of ${error.limit} (limits.maxResponseMb)`);
    }
  },
});
