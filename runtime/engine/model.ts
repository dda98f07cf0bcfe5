/**
 * A loaded TorchScript model, or another instance of one: `share()` makes an instance over the same
 * weights (no second copy of them), with its own execution lane (on CUDA, its own stream).
 */
import { DisposedError } from '../../sdk/errors.js';
import type { EngineDType, NamedTensor, Tensor } from '../../sdk/tensor.js';
import { viewAs } from '../../sdk/tensor.js';
import type { RawForwardResult, RawModel } from './binding.js';
import { fromNativeCode } from './native-errors.js';

export type OutputKind = 'tensor' | 'tuple' | 'list' | 'dict';

export interface ForwardResult {
  /** What forward returned; outputs of nested containers are flattened with dotted names ("1.0"). */
  kind: OutputKind;
  /** A List[str] output comes as BYTES (Triton's length-prefixed strings), shape [count]. */
  outputs: NamedTensor<EngineDType | 'BYTES'>[];
}

export interface ModelInfo {
  device: string;
  /** Forward runs under c10::InferenceMode (else NoGradGuard), with TorchScript's graph optimisations or not. */
  inferenceMode: boolean;
  optimizedExecution: boolean;
  /** Inputs forward() takes (fewer when trailing ones have defaults; maxInputs -1 = variadic). */
  minInputs: number;
  maxInputs: number;
  /** forward()'s argument names after self, in order, and their TorchScript types ("Tensor", "List[str]"). */
  argNames: string[];
  argTypes: string[];
  /** Bytes of the model's parameters and buffers on its device, shared by all its instances. */
  weightBytes: number;
  loadMs: number;
  warmupMs: number;
  warmupRuns: number;
  /** Forwards running or queued on this instance. */
  inflight: number;
  /** Live handles on these weights (this one included). */
  instances: number;
}

export class Model {
  readonly #native: RawModel;
  #disposed = false;

  /** @internal Made by loadModel() and share(). */
  constructor(native: RawModel) {
    this.#native = native;
  }

  /**
   * Runs forward off the JS thread. On CPU the inputs' memory is read in place: do not write to
   * their buffers until the promise settles. With `dictKeys`, the inputs go to a forward() that
   * takes one Dict[str, Tensor], under those names. `threads`: intra-op threads for this forward
   * alone (default: the engine's setIntraOpThreads count). `maxOutputBytes`: what the outputs may
   * take in all (numel × element size, whatever their strides), checked before any is copied: past
   * it the forward fails with InferenceError (reason ERR_OUTPUT_SIZE). Default: no limit.
   */
  async forward(
    inputs: readonly Tensor[],
    dictKeys?: readonly string[],
    threads?: number,
    maxOutputBytes?: number,
  ): Promise<ForwardResult> {
    return this.#result(() => this.#native.forward(inputs, dictKeys, threads, maxOutputBytes));
  }

  /**
   * Runs one forward over a batch given in parts: `parts[i]` holds the pieces of input i (one per
   * request), concatenated along the batch dimension on the engine's thread — the batch's one copy,
   * never on the event loop. `maxOutputBytes` as forward()'s.
   */
  async forwardBatch(
    parts: readonly (readonly Tensor[])[],
    dictKeys?: readonly string[],
    threads?: number,
    maxOutputBytes?: number,
  ): Promise<ForwardResult> {
    return this.#result(() => this.#native.forwardBatch(parts, dictKeys, threads, maxOutputBytes));
  }

  async #result(run: () => Promise<RawForwardResult>): Promise<ForwardResult> {
    let raw: RawForwardResult;
    try {
      raw = await run();
    } catch (error) {
      throw fromNativeCode(error);
    }
    return {
      kind: raw.kind,
      outputs: raw.outputs.map((o) => ({
        name: o.name,
        dtype: o.dtype,
        shape: o.shape,
        data: viewAs(o.dtype, o.data),
      })),
    };
  }

  /** Another instance over the same weights. */
  share(): Model {
    try {
      return new Model(this.#native.share());
    } catch (error) {
      throw fromNativeCode(error);
    }
  }

  /** Drops this handle. Running forwards finish; weights are freed with the last handle. Idempotent. */
  dispose(): void {
    this.#disposed = true;
    this.#native.dispose();
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  get info(): ModelInfo {
    const i = this.#native.info();
    if (i.disposed) throw new DisposedError('the model was disposed', { reason: 'ERR_DISPOSED' });
    return i as ModelInfo;
  }
}
