/**
 * The one mapping from the addon's stable error codes to Hearth's typed errors.
 */
import {
  DeviceUnavailableError,
  DisposedError,
  HearthError,
  InferenceError,
  InvalidInputError,
  ModelLoadError,
} from '../../sdk/errors.js';

const BY_CODE: Record<string, new (message: string, options: { cause: unknown; reason: string }) => HearthError> = {
  ERR_MODEL_LOAD: ModelLoadError,
  ERR_DEVICE: DeviceUnavailableError,
  ERR_INVALID_ARGUMENT: InvalidInputError,
  ERR_INPUT_COUNT: InvalidInputError,
  ERR_SHAPE: InvalidInputError,
  ERR_DTYPE: InvalidInputError,
  ERR_FORWARD: InferenceError,
  ERR_OUTPUT: InferenceError,
  ERR_DISPOSED: DisposedError,
};

export function fromNativeCode(error: unknown): HearthError {
  if (error instanceof HearthError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  const Class = typeof code === 'string' ? BY_CODE[code] : undefined;
  if (Class === undefined) return new HearthError(message, { cause: error });
  return new Class(message, { cause: error, reason: code as string });
}
