/**
 * /api/v1/secrets: values go in and never come out — names and times out. Each key reaches its own
 * tenant's secrets (../../secrets/secrets.ts); an admin key names another tenant with `?tenant=`.
 */
import type { Context } from 'hono';
import { Hono } from 'hono';

import type { Reply, SecretDeleted, SecretInfo, SecretList } from '../../../sdk/api/index.js';
import { SecretRequestSchema } from '../../../sdk/api/index.js';
import { InvalidInputError, UnsupportedError } from '../../../sdk/errors.js';
import type { ApiKey } from '../../config/index.js';
import { TENANT_NAME } from '../../config/index.js';
import type { SecretStore } from '../../secrets/index.js';
import { jsonBody } from '../json-body.js';
import type { AppEnv } from '../middleware.js';
import { auth, callerOf, limit } from '../middleware.js';

export function secretRoutes(o: { secrets?: SecretStore; apiKeys: ApiKey[] }): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const manage = auth(o.apiKeys, 'deploy');
  const secrets = () => {
    if (!o.secrets) throw new UnsupportedError('this node keeps no secrets');
    return o.secrets;
  };
  app.get('/secrets', manage, async (c) =>
    c.json({ secrets: await secrets().list(tenantOf(c)) } satisfies Reply<SecretList>),
  );
  app.put('/secrets/:name', manage, limit(256 * 1024), jsonBody(SecretRequestSchema), async (c) =>
    c.json(
      (await secrets().set(tenantOf(c), c.req.param('name'), c.req.valid('json').value)) satisfies Reply<SecretInfo>,
    ),
  );
  app.delete('/secrets/:name', manage, async (c) => {
    const name = c.req.param('name');
    return c.json({ name, deleted: await secrets().delete(tenantOf(c), name) } satisfies Reply<SecretDeleted>);
  });
  return app;
}

/** The tenant whose secrets a request reaches: its key's, or (an admin key) the one `?tenant=` names. */
function tenantOf(c: Context<AppEnv>): string {
  const caller = callerOf(c);
  const named = c.req.query('tenant');
  if (named === undefined) return caller.tenant;
  if (caller.scope !== 'admin') {
    if (named === caller.tenant) return named;
    throw new InvalidInputError("?tenant= is an admin key's: a deploy key reaches its own tenant's secrets");
  }
  if (!TENANT_NAME.test(named)) throw new InvalidInputError('?tenant= is lower case letters, digits and -, at most 63');
  return named;
}
