/** /api/v1/pools and /api/v1/nodes: what runs where (every live node's, in cluster mode). */
import { Hono } from 'hono';

import type { NodeList, PoolList, Reply } from '../../../sdk/api/index.js';
import type { ApiKey } from '../../config/index.js';
import type { ManagedFunctions } from '../../functions/serving.js';
import type { AppEnv } from '../middleware.js';
import { auth } from '../middleware.js';

export function nodeRoutes(o: { functions: ManagedFunctions; apiKeys: ApiKey[] }): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const admin = auth(o.apiKeys, 'admin');
  app.get('/pools', admin, async (c) => {
    await o.functions.refreshStats();
    return c.json({ pools: o.functions.clusterPools() } satisfies Reply<PoolList>);
  });
  app.get('/nodes', admin, (c) => c.json({ nodes: o.functions.nodes() } satisfies Reply<NodeList>));
  return app;
}
