/**
 * A model's outputs checked before anyone is answered with them: each is the spec's dtype and dims
 * (as Triton's PyTorch backend refuses an output of another datatype), and a request's outputs fit
 * the bytes it may return. The engine refuses outputs past the batch's bytes before copying any
 * (native/src/tensor.cc); here each request's share is held to its own limit. Per reply, never per
 * element.
 */
import { InferenceError } from '../../sdk/errors.js';
import type { FunctionSpec, OutputSpec } from '../../sdk/spec/function-spec.js';
import type { Tensor, TensorsByName } from '../../sdk/tensor.js';

const shapeText = (dims: readonly number[]): string => `[${dims.join(', ')}]`;

/**
 * The bytes one request's outputs may take: limits.maxResponseMb where they leave the runner (KServe,
 * gRPC, the function URL's default hook); where the function's own hook takes them, they stay in
 * the runner, and only its memory bounds them (post's response has limits.maxResponseMb).
 */
export function outputLimit(spec: FunctionSpec, toOwnHook: boolean): number {
  return (toOwnHook && spec.hook ? spec.limits.runnerMemoryMb : spec.limits.maxResponseMb) * 2 ** 20;
}

/** An output as the model returned it, against its spec (reshape.shape where the spec reshapes it). */
export function checkOutput(o: OutputSpec, t: Tensor, batched: boolean): void {
  if (t.dtype !== o.dtype)
    throw new InferenceError(`the model's output "${o.name}" is ${t.dtype}, but the spec says ${o.dtype}`, {
      reason: 'ERR_DTYPE',
    });
  // A List[str] output is one list of every row's strings (splitStrings cuts it).
  if (t.dtype === 'BYTES') return;
  const dims = o.reshape ?? o.dims;
  const own = batched ? t.shape.slice(1) : t.shape;
  const fits =
    (!batched || t.shape.length > 0) && own.length === dims.length && dims.every((d, i) => d === -1 || d === own[i]);
  if (!fits)
    throw new InferenceError(
      `the model's output "${o.name}" has shape ${shapeText(t.shape)}, but the spec says ${batched ? `[batch, ${dims.join(', ')}]` : shapeText(dims)}`,
      { reason: 'ERR_SHAPE' },
    );
}

/** Each request's outputs within `limits[i]` bytes; past it the batch fails, naming the limit. */
export function checkOutputBytes(outputs: readonly TensorsByName[], limits: readonly number[]): void {
  outputs.forEach((out, i) => {
    let bytes = 0;
    for (const t of Object.values(out)) bytes += t.data.byteLength;
    const limit = limits[i]!;
    if (bytes > limit)
      throw new InferenceError(
        `the outputs of a request are ${bytes} bytes, over its limit of ${limit} (limits.maxResponseMb)`,
        { reason: 'ERR_OUTPUT_SIZE' },
      );
  });
}
