/** A node shared by the tests of one file, with the clients they call it through. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll } from 'vitest';

import type { HearthNode } from '../../platform/node/index.js';
import { Hearth } from '../../sdk/client.js';
import type { InferenceClient } from './grpc.js';
import { inferenceClient } from './grpc.js';
import { testNode } from './node.js';

export interface FileNode {
  node: HearthNode;
  /** The SDK client, with `apiKey` when one was given. */
  client: Hearth;
  rpc: InferenceClient;
  /** The file's own folder (the node's data is under it). */
  dir: string;
}

/**
 * Starts a node (in this process, with `env`) before the file's tests and closes it, with its
 * folder, after them. Read the fields inside tests and hooks: they are set once the node is up.
 */
export function nodeForFile(name: string, env: Record<string, string> = {}, apiKey?: string): FileNode {
  const suite = {} as FileNode;
  beforeAll(async () => {
    suite.dir = await mkdtemp(join(tmpdir(), `hearth-${name}-`));
    suite.node = await testNode(join(suite.dir, 'node'), env);
    suite.client = new Hearth({ url: suite.node.httpUrl, ...(apiKey ? { apiKey } : {}) });
    suite.rpc = inferenceClient(suite.node.grpcAddress);
  });
  afterAll(async () => {
    suite.rpc?.close();
    await suite.node?.close();
    if (suite.dir) await rm(suite.dir, { recursive: true, force: true });
  });
  return suite;
}
