/** Triton's PyTorch-backend `parameters` block, applied to a spec. */
import { InvalidInputError } from '../../errors.js';
import type { FunctionSpecInput } from '../function-spec.js';
import type { Fields } from './fields.js';

/** The parameters Triton's PyTorch backend reads, applied to the spec; others are kept and noted. */
export function applyParameters(top: Fields, spec: FunctionSpecInput, notes: string[]): void {
  const parameters: Record<string, string> = {};
  for (const p of top.messages('parameters')) {
    const key = p.string('key');
    const value = p.message('value');
    const text = value?.string('string_value') ?? '';
    value?.done();
    p.done();
    if (!key) throw new InvalidInputError(`config.pbtxt: ${p.path('key')} is required`);
    parameters[key] = text;
  }
  const keys = Object.keys(parameters);
  if (keys.length === 0) return;
  spec.parameters = parameters;
  const bool = (key: string): boolean | undefined => {
    const v = parameters[key];
    if (v === undefined) return undefined;
    if (/^(true|1|on|yes)$/i.test(v)) return true;
    if (/^(false|0|off|no)$/i.test(v)) return false;
    throw new InvalidInputError(`config.pbtxt: parameters["${key}"] must be "true" or "false", got "${v}"`, {
      reason: 'parameters',
    });
  };
  const execution: NonNullable<FunctionSpecInput['execution']> = {};
  const inference = bool('INFERENCE_MODE');
  if (inference !== undefined) execution.inferenceMode = inference;
  const disableOptimized = bool('DISABLE_OPTIMIZED_EXECUTION');
  if (disableOptimized !== undefined) execution.optimizedExecution = !disableOptimized;
  const executor = bool('ENABLE_JIT_EXECUTOR');
  if (executor !== undefined) execution.jitExecutor = executor;
  const profiling = bool('ENABLE_JIT_PROFILING');
  if (profiling !== undefined) execution.jitProfiling = profiling;
  spec.execution = execution;
  const intra = parameters.INTRA_OP_THREAD_COUNT;
  if (intra !== undefined) {
    const n = Number(intra);
    if (!Number.isInteger(n) || n < 0)
      throw new InvalidInputError(
        `config.pbtxt: parameters["INTRA_OP_THREAD_COUNT"] must be a whole number, got "${intra}"`,
        { reason: 'parameters' },
      );
    spec.instances = { ...spec.instances, threads: n };
  }
  const APPLIED = [
    'INFERENCE_MODE',
    'DISABLE_OPTIMIZED_EXECUTION',
    'ENABLE_JIT_EXECUTOR',
    'ENABLE_JIT_PROFILING',
    'INTRA_OP_THREAD_COUNT',
  ];
  const NO_EFFECT: Record<string, string> = {
    ENABLE_WEIGHT_SHARING: 'instances always share one copy of the weights in Hearth',
    INTER_OP_THREAD_COUNT: 'Hearth runs each forward on its own engine lane; inter-op threads are not used',
    ENABLE_CACHE_CLEANING: 'CUDA cache cleaning between forwards is not done by Hearth',
    DISABLE_CUDNN: 'cuDNN stays as LibTorch sets it',
    ENABLE_TENSOR_FUSER: 'the tensor fuser stays as LibTorch sets it',
    ENABLE_NVFUSER: 'the NVFuser stays as LibTorch sets it',
  };
  for (const key of keys) {
    if (APPLIED.includes(key)) continue;
    notes.push(
      NO_EFFECT[key]
        ? `parameters["${key}"] has no effect: ${NO_EFFECT[key]}`
        : `parameters["${key}"] is not read by Hearth; kept with the spec`,
    );
  }
}
