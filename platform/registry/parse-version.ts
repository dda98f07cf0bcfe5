/** A version number as a request names it, read the same way by HTTP, gRPC and the management API. */
import { InvalidInputError } from '../../sdk/errors.js';

/**
 * A version as a request names it (a `{version}` path segment, gRPC's `model_version`) → a version
 * number; absent or empty names none (the traffic split picks one).
 */
export function parseVersion(value: unknown): number | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !/^[1-9]\d*$/.test(value))
    // Triton's words first (its clients look for them), then what a version is.
    throw new InvalidInputError(
      `failed to get model version from specified version string '${String(value)}' (a version must be a positive integer)`,
    );
  return Number(value);
}
