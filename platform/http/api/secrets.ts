/** /api/v1/secrets: values go in and never come out — names and times out. */
import { Hono } from 'hono';

import type { Reply, SecretDeleted, SecretInfo, SecretList } from '../../../sdk/api/index.js';
import { SecretRequestSchema } from '../../../sdk/api/index.js';
import { UnsupportedError } from '../../../sdk/errors.js';
import type { ApiKey } from '../../config/index.js';
import type { SecretStore } from '../../secrets/index.js';
import { jsonBody } from '../json-body.js';
import type { AppEnv } from '../middleware.js';
import { auth, limit } from '../middleware.js';

export function secretRoutes(o: { secrets?: SecretStore; apiKeys: ApiKey[] }): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const admin = auth(o.apiKeys, 'admin');
  const secrets = () => {
    if (!o.secrets) throw new UnsupportedError('this node keeps no secrets');
    return o.secrets;
  };
  app.get('/secrets', admin, async (c) => c.json({ secrets: await secrets().list() } satisfies Reply<SecretList>));
  app.put('/secrets/:name', admin, limit(256 * 1024), jsonBody(SecretRequestSchema), async (c) =>
    c.json((await secrets().set(c.req.param('name'), c.req.valid('json').value)) satisfies Reply<SecretInfo>),
  );
  app.delete('/secrets/:name', admin, async (c) => {
    const name = c.req.param('name');
    return c.json({ name, deleted: await secrets().delete(name) } satisfies Reply<SecretDeleted>);
  });
  return app;
}
