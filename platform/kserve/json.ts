/**
 * The protocol's JSON: an infer request's JSON is read by the addon (simdjson; a large body off the
 * event loop, numbers of a tensor's data as one Float64Array), every other request's by JSON.parse.
 */
import { parseInferJsonAsync } from '../../runtime/index.js';
import { InvalidInputError } from '../../sdk/errors.js';

/** An infer request's JSON (the whole body, or the binary extension's header). */
export function parseInferJson(bytes: Uint8Array): Promise<unknown> {
  return parseInferJsonAsync(bytes);
}

/** A small request's JSON (register, load), its failure the caller's bad input naming `what`. */
export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidInputError(`${what} is not valid JSON: ${(error as Error).message}`);
  }
}
