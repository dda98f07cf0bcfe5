/**
 * What server metadata says this node speaks — exactly the extensions implemented — and the
 * checks on Triton's repository-load request, shared by HTTP and gRPC.
 */
import { InvalidInputError, UnsupportedError } from '../sdk/errors.js';

/** The extensions this node implements (system shared memory only where it is on). */
export function serverExtensions(systemSharedMemory: boolean): string[] {
  return [
    'classification',
    'model_repository',
    'model_configuration',
    'statistics',
    'binary_tensor_data',
    ...(systemSharedMemory ? ['system_shared_memory'] : []),
  ];
}

export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidInputError(`${what} is not valid JSON: ${(error as Error).message}`);
  }
}

/**
 * A repository load's `parameters`: a `config` override must at least be a JSON object (a
 * malformed one is refused, as Triton refuses it); an override itself, and `file:` contents,
 * are refused by name — a new configuration is a new deploy (a new version) in Hearth.
 */
export function checkLoadParameters(request: unknown): void {
  const parameters = (request as { parameters?: Record<string, unknown> } | null)?.parameters;
  if (parameters === undefined) return;
  if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters))
    throw new InvalidInputError("the load request's parameters must be an object");
  for (const [key, value] of Object.entries(parameters)) {
    if (key === 'config') {
      const text = typeof value === 'string' ? value : (value as { string_param?: string })?.string_param;
      if (typeof text !== 'string')
        throw new InvalidInputError('parameters.config must be the model configuration as a JSON string');
      const config = parseJson(text, 'parameters.config');
      if (typeof config !== 'object' || config === null || Array.isArray(config))
        throw new InvalidInputError('parameters.config must be a JSON object (a model configuration)');
      throw new InvalidInputError(
        'a configuration override on load is not supported by Hearth: deploy the changed configuration as a new version (hearth deploy)',
      );
    }
    if (key.startsWith('file:'))
      throw new InvalidInputError(
        `parameters["${key}"]: loading model files through the load request is not supported by Hearth; deploy them (hearth deploy)`,
      );
  }
}

/** CUDA shared memory needs a CUDA device and a CUDA build; until then every register says so. */
export function cudaSharedMemoryUnsupported(): never {
  throw new UnsupportedError(
    'CUDA shared memory is not supported on this node: it has no CUDA device (use system shared memory, or send tensors in the request)',
  );
}
