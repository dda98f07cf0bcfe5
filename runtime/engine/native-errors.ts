/**
 * The one mapping from the addon's stable error codes to Hearth's typed errors.
 */
import * as errors from '../../sdk/errors.js';
import { HearthError } from '../../sdk/errors.js';

const BY_CODE: Record<string, new (message: string, options: { cause: unknown; reason: string }) => HearthError> = {
  ERR_MODEL_LOAD: errors.ModelLoadError,
  ERR_MODEL_UNSAFE: errors.ModelLoadError,
  ERR_DEVICE: errors.DeviceUnavailableError,
  ERR_INVALID_ARGUMENT: errors.InvalidInputError,
  ERR_INPUT_COUNT: errors.InvalidInputError,
  ERR_SHAPE: errors.InvalidInputError,
  ERR_DTYPE: errors.InvalidInputError,
  ERR_FORWARD: errors.InferenceError,
  ERR_OUTPUT: errors.InferenceError,
  ERR_OUTPUT_SIZE: errors.InferenceError,
  ERR_DISPOSED: errors.DisposedError,
  ERR_IMAGE: errors.InvalidInputError,
};

export function fromNativeCode(error: unknown): HearthError {
  if (error instanceof HearthError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  const Class = typeof code === 'string' ? BY_CODE[code] : undefined;
  if (Class === undefined) return new HearthError(message, { cause: error });
  return new Class(message, { cause: error, reason: code as string });
}
