/** The artifact store chosen by configuration: files under the data dir, or S3 with a local cache. */
import { join } from 'node:path';

import type { Config } from '../config/index.js';
import type { ArtifactStore } from './artifact-store.js';
import { ArtifactCache } from './cache.js';
import { FsArtifactStore } from './fs/fs-artifact-store.js';
import { S3ArtifactStore } from './s3/s3-artifact-store.js';

export * from './artifact-store.js';
export { ArtifactCache } from './cache.js';
export type { ArtifactClaims } from './claims.js';
export { checkHashes, mayUse } from './claims.js';
export { FsArtifactStore } from './fs/fs-artifact-store.js';
export { S3ArtifactStore } from './s3/s3-artifact-store.js';

export function createArtifactStore(
  config: Config,
  onRefused?: (sha256: string, actual: string) => void,
): ArtifactStore {
  if (!config.s3) return new FsArtifactStore(config.dataDir);
  const cache = new ArtifactCache(join(config.dataDir, 'cache'), config.cacheMaxBytes, onRefused);
  return new S3ArtifactStore(config.s3, cache);
}
