/**
 * /api/v1/artifacts: content-addressed uploads (by sha256), their size, and imports from S3. A deploy
 * key sees and uses only the artifacts its tenant has uploaded (../../artifacts/claims.ts): one
 * stored already is, to it, not there until it sends the bytes.
 */
import { Readable } from 'node:stream';
import type { ReadableStream } from 'node:stream/web';

import type { Context } from 'hono';
import { Hono } from 'hono';

import type { ArtifactInfo, ArtifactStored, Reply } from '../../../sdk/api/index.js';
import { ImportRequestSchema } from '../../../sdk/api/index.js';
import { InvalidInputError } from '../../../sdk/errors.js';
import type { ArtifactStore } from '../../artifacts/index.js';
import { checkHashes, checkSha, mayUse } from '../../artifacts/index.js';
import type { ApiKey } from '../../config/index.js';
import { DEFAULT_TENANT } from '../../config/index.js';
import { jsonBody } from '../json-body.js';
import type { AppEnv } from '../middleware.js';
import { auth, callerOf, deployerOf, limit } from '../middleware.js';

export interface ArtifactRouteOptions {
  artifacts: ArtifactStore;
  apiKeys: ApiKey[];
  /** Largest artifact upload. */
  maxArtifactBytes: number;
  /** Told the size of every artifact upload the node stores (a metric). */
  onUpload?: (bytes: number) => void;
}

export function artifactRoutes(o: ArtifactRouteOptions): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const admin = auth(o.apiKeys, 'admin');
  const deploy = auth(o.apiKeys, 'deploy');
  const usable = (c: Context<AppEnv>, sha: string) => mayUse(o.artifacts, deployerOf(c), sha);
  // HEAD (hono answers it from this GET route): is the artifact there, and how big; GET: as JSON.
  app.get('/artifacts/:sha', deploy, async (c) => {
    const sha = c.req.param('sha');
    checkSha(sha);
    const info = await o.artifacts.stat(sha);
    if (!info || !(await usable(c, sha)))
      return c.json({ error: `artifact ${sha} is not in the store`, code: 'ARTIFACT_NOT_FOUND' }, 404);
    c.header('X-Artifact-Size', String(info.size));
    return c.json(info satisfies Reply<ArtifactInfo>);
  });
  app.put('/artifacts/:sha', deploy, limit(o.maxArtifactBytes), async (c) => {
    const sha = c.req.param('sha');
    checkSha(sha);
    const existing = await o.artifacts.stat(sha);
    if (existing && (await usable(c, sha)))
      return c.json({ ...existing, created: false } satisfies Reply<ArtifactStored>);
    const body = c.req.raw.body;
    if (!body) throw new InvalidInputError('send the artifact bytes as the request body');
    const bytes = Readable.fromWeb(body as ReadableStream<Uint8Array>);
    const { tenant } = callerOf(c);
    if (existing) {
      // Stored already (another tenant's upload): the bytes prove the caller has them; nothing is
      // written. One stored before tenants (no claim) stays the default tenant's too. Answered as a
      // first upload is: whether another tenant has sent the same bytes is not the caller's to learn.
      await checkHashes(bytes, sha);
      if ((await o.artifacts.claimants(sha)).length === 0) await o.artifacts.claim(sha, DEFAULT_TENANT);
      await o.artifacts.claim(sha, tenant);
      return c.json({ ...existing, created: true } satisfies Reply<ArtifactStored>, 201);
    }
    const info = await o.artifacts.put(sha, bytes);
    await o.artifacts.claim(sha, tenant);
    o.onUpload?.(info.size);
    return c.json({ ...info, created: true } satisfies Reply<ArtifactStored>, 201);
  });
  // From the operator's bucket: an admin's.
  app.post('/artifacts/import', admin, jsonBody(ImportRequestSchema), async (c) => {
    const { uri } = c.req.valid('json');
    const info = await o.artifacts.importS3(uri);
    await o.artifacts.claim(info.sha256, callerOf(c).tenant);
    return c.json(info satisfies Reply<ArtifactInfo>, 201);
  });
  return app;
}
