/** /api/v1/catalog: what any key may call (its tenant's functions) — the console's view for an invoke key. */
import type { Hono } from 'hono';

import type { Catalog, Reply } from '../../../sdk/api/index.js';
import type { ApiKey } from '../../config/index.js';
import type { ManagedFunctions } from '../../functions/serving.js';
import { managedFor } from '../../functions/tenant-view.js';
import { shownVersion } from '../../registry/index.js';
import type { AppEnv } from '../middleware.js';
import { auth, callerOf } from '../middleware.js';

export function catalogRoute(app: Hono<AppEnv>, o: { functions: ManagedFunctions; apiKeys: ApiKey[] }): void {
  // What any key may call (the console's view for an invoke key): inputs and outputs, no internals.
  app.get('/catalog', auth(o.apiKeys, 'invoke'), async (c) => {
    const io = (t: { name: string; dtype: string; dims: number[] }) => ({ name: t.name, dtype: t.dtype, dims: t.dims });
    const caller = callerOf(c);
    const records = await managedFor(caller, o.functions).list();
    return c.json({
      // What the console offers: shm is an invoke key that may also register shared memory.
      scope: caller.scope === 'shm' ? 'invoke' : caller.scope,
      tenant: caller.tenant,
      functions: records.map((r) => ({
        name: r.name,
        traffic: r.traffic,
        versions: r.versions.map((v) => ({
          version: v.version,
          status: shownVersion(v).status,
          inputs: v.spec.inputs.map(io),
          outputs: v.spec.outputs.map(io),
          maxBatchSize: v.spec.maxBatchSize,
          hook: v.spec.hook !== undefined,
          // The body the deploy was checked with: what Try it starts from.
          ...(v.spec.example !== undefined ? { example: v.spec.example } : {}),
          ...(v.spec.exampleFile !== undefined ? { exampleFile: v.spec.exampleFile } : {}),
        })),
      })),
    } satisfies Reply<Catalog>);
  });
}
