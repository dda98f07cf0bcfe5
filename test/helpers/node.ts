/** Hearth nodes for end-to-end tests: real HTTP on loopback, their own data dir and Redis prefix. */
import { createHash, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { loadConfig } from '../../platform/config.js';
import type { HearthNode } from '../../platform/node.js';
import { startNode } from '../../platform/node.js';
import { bundleHook } from '../../runtime/hooks/index.js';
import { REPO_ROOT } from './fixtures.js';

export async function testNode(dataDir: string, env: Record<string, string> = {}): Promise<HearthNode> {
  return startNode(loadConfig({ HEARTH_HTTP_PORT: '0', HEARTH_GRPC_PORT: '0', HEARTH_METRICS_PORT: '0', HEARTH_DATA_DIR: dataDir, HEARTH_LOG_LEVEL: 'silent', ...env }));
}

export const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** Uploads bytes as an artifact (HEAD first, as the CLI does); returns the hash. */
export async function upload(url: string, bytes: Uint8Array, headers: Record<string, string> = {}): Promise<string> {
  const sha = sha256(bytes);
  const head = await fetch(`${url}/api/v1/artifacts/${sha}`, { method: 'HEAD', headers });
  if (head.status === 200) return sha;
  const put = await fetch(`${url}/api/v1/artifacts/${sha}`, { method: 'PUT', body: bytes, headers });
  if (put.status !== 201) throw new Error(`upload failed: ${put.status} ${await put.text()}`);
  return sha;
}

export async function hookBundle(name: string, outDir: string, hooksDir = join(REPO_ROOT, 'test', 'fixtures', 'hooks')): Promise<Uint8Array> {
  const { path } = await bundleHook(join(hooksDir, `${name}.ts`), outDir);
  return new Uint8Array(await readFile(path));
}

export function uniquePrefix(): string {
  return `test:${randomUUID()}:`;
}
