/**
 * What the Triton protocol files share: the simple model's name and a request for it (two FP32 rows
 * of 4, named out of the model's order), and a JSON POST to the file's node.
 */

import { randomTensor } from '../../helpers/random.js';
import type { FileNode } from '../../helpers/suite.js';

export const SIMPLE = 'simple.shuffled_Args';

export const simpleRequest = (seed: number, rows = 1) => ({
  inputs: ['INPUT1', 'INPUT0'].map((name, i) => ({
    name,
    datatype: 'FP32',
    shape: [rows, 4],
    data: Array.from(randomTensor('FP32', [rows, 4], seed + i).data),
  })),
});

/** POSTs `body` as JSON to a path of the file's node. */
export function jsonPoster(
  suite: FileNode,
): (path: string, body: unknown, headers?: Record<string, string>) => Promise<Response> {
  return (path, body, headers = {}) =>
    fetch(`${suite.node.httpUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
}
