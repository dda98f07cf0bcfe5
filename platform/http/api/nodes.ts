/**
 * /api/v1/pools and /api/v1/nodes: what runs where (every live node's, in cluster mode). A deploy
 * key sees the pools of its tenant's functions; the nodes are an admin's.
 */
import { Hono } from 'hono';

import type { NodeList, PoolList, Reply } from '../../../sdk/api/index.js';
import type { ApiKey } from '../../config/index.js';
import type { ManagedFunctions } from '../../functions/serving.js';
import { managedFor } from '../../functions/tenant-view.js';
import type { AppEnv } from '../middleware.js';
import { auth, callerOf } from '../middleware.js';

export function nodeRoutes(o: { functions: ManagedFunctions; apiKeys: ApiKey[] }): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const admin = auth(o.apiKeys, 'admin');
  app.get('/pools', auth(o.apiKeys, 'deploy'), async (c) => {
    await o.functions.refreshStats();
    const caller = callerOf(c);
    const pools = o.functions.clusterPools();
    if (caller.scope === 'admin') return c.json({ pools } satisfies Reply<PoolList>);
    const mine = new Set((await managedFor(caller, o.functions).list()).map((r) => r.name));
    return c.json({ pools: pools.filter((p) => mine.has(p.function)) } satisfies Reply<PoolList>);
  });
  app.get('/nodes', admin, (c) => c.json({ nodes: o.functions.nodes() } satisfies Reply<NodeList>));
  return app;
}
