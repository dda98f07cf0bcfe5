/** /api/v1/artifacts: content-addressed uploads (by sha256), their size, and imports from S3. */
import { Readable } from 'node:stream';
import type { ReadableStream } from 'node:stream/web';

import { Hono } from 'hono';

import type { ArtifactInfo, ArtifactStored, Reply } from '../../../sdk/api/index.js';
import { ImportRequestSchema } from '../../../sdk/api/index.js';
import { InvalidInputError } from '../../../sdk/errors.js';
import type { ArtifactStore } from '../../artifacts/index.js';
import { checkSha } from '../../artifacts/index.js';
import type { ApiKey } from '../../config/index.js';
import { jsonBody } from '../json-body.js';
import type { AppEnv } from '../middleware.js';
import { auth, limit } from '../middleware.js';

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
  // HEAD (hono answers it from this GET route): is the artifact there, and how big; GET: as JSON.
  app.get('/artifacts/:sha', admin, async (c) => {
    const sha = c.req.param('sha');
    checkSha(sha);
    const info = await o.artifacts.stat(sha);
    if (!info) return c.json({ error: `artifact ${sha} is not in the store`, code: 'ARTIFACT_NOT_FOUND' }, 404);
    c.header('X-Artifact-Size', String(info.size));
    return c.json(info satisfies Reply<ArtifactInfo>);
  });
  app.put('/artifacts/:sha', admin, limit(o.maxArtifactBytes), async (c) => {
    const sha = c.req.param('sha');
    checkSha(sha);
    const existing = await o.artifacts.stat(sha);
    if (existing) return c.json({ ...existing, created: false } satisfies Reply<ArtifactStored>);
    const body = c.req.raw.body;
    if (!body) throw new InvalidInputError('send the artifact bytes as the request body');
    const info = await o.artifacts.put(sha, Readable.fromWeb(body as ReadableStream<Uint8Array>));
    o.onUpload?.(info.size);
    return c.json({ ...info, created: true } satisfies Reply<ArtifactStored>, 201);
  });
  app.post('/artifacts/import', admin, jsonBody(ImportRequestSchema), async (c) => {
    const { uri } = c.req.valid('json');
    return c.json((await o.artifacts.importS3(uri)) satisfies Reply<ArtifactInfo>, 201);
  });
  return app;
}
