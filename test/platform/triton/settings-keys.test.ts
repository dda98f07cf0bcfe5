/**
 * Who may read and change Triton's trace and logging settings on a node with API keys, over HTTP
 * and gRPC. As the repository extension: a deploy key's, on its tenant's models only (another
 * tenant's model is unknown, in the same words as one that does not exist); the node's own
 * settings (global trace settings, logging) are read by a deploy key and changed by an admin.
 */
import { join } from 'node:path';

import * as grpc from '@grpc/grpc-js';
import { beforeAll, describe, expect, it } from 'vitest';

import { deployFolder } from '../../../sdk/cli/deploy.js';
import { Hearth } from '../../../sdk/client.js';
import { TRITON_REPO } from '../../helpers/fixtures.js';
import { grpcCall } from '../../helpers/grpc.js';
import { nodeForFile } from '../../helpers/suite.js';
import { SIMPLE } from './requests.js';

const KEYS = {
  admin: 'admin-key-0001',
  deployA: 'deploy-a-key-0001',
  deployB: 'deploy-b-key-0001',
  invokeA: 'invoke-a-key-0001',
};
const suite = nodeForFile('settings-keys', {
  HEARTH_API_KEYS: `${KEYS.admin}:admin,${KEYS.deployA}:deploy@team-a,${KEYS.deployB}:deploy@team-b,${KEYS.invokeA}:invoke@team-a`,
});

beforeAll(async () => {
  const teamA = new Hearth({ url: suite.node.httpUrl, apiKey: KEYS.deployA });
  expect((await deployFolder(teamA, join(TRITON_REPO, SIMPLE))).status).toBe('ready');
});

async function call(
  key: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, string> }> {
  const r = await fetch(`${suite.node.httpUrl}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: r.status, body: (await r.json()) as Record<string, string> };
}

const rpcCode = (method: string, request: object, key: string) =>
  grpcCall(suite.rpc, method, request, key).then(
    () => grpc.status.OK,
    (e: grpc.ServiceError) => e.code,
  );

describe('trace and logging settings with API keys', () => {
  it("lets a deploy key read the node's settings and change its own models', and only an admin change the node's", async () => {
    const model = `/v2/models/${SIMPLE}/trace/setting`;
    expect((await call(KEYS.invokeA, '/v2/trace/setting')).status).toBe(403);
    expect((await call(KEYS.invokeA, '/v2/logging')).status).toBe(403);
    expect((await call(KEYS.deployA, '/v2/trace/setting')).status).toBe(200);
    expect((await call(KEYS.deployA, '/v2/logging')).status).toBe(200);

    const global = await call(KEYS.deployA, '/v2/trace/setting', { trace_rate: '5' });
    expect(global.status).toBe(403);
    expect(global.body.error).toContain("may not change the node's trace settings (needs scope admin)");
    expect((await call(KEYS.deployA, '/v2/logging', { log_info: false })).status).toBe(403);
    expect(await rpcCode('TraceSetting', { settings: { trace_rate: { value: ['5'] } } }, KEYS.deployA)).toBe(
      grpc.status.PERMISSION_DENIED,
    );
    expect(await rpcCode('LogSettings', { settings: { log_info: { bool_param: false } } }, KEYS.deployA)).toBe(
      grpc.status.PERMISSION_DENIED,
    );
    expect((await call(KEYS.deployA, '/v2/trace/setting')).body.trace_rate).toBe('1000');

    const own = await call(KEYS.deployA, model, { trace_rate: '5' });
    expect(own.status).toBe(200);
    expect(own.body.trace_rate).toBe('5');
    expect(
      await rpcCode('TraceSetting', { model_name: SIMPLE, settings: { trace_rate: { value: ['6'] } } }, KEYS.deployA),
    ).toBe(grpc.status.OK);

    // Another tenant's model is as unknown as one that does not exist.
    for (const name of [SIMPLE, 'no-such-model']) {
      const other = await call(KEYS.deployB, `/v2/models/${name}/trace/setting`, { trace_rate: '1' });
      expect(other.status).toBe(400);
      expect(other.body.error).toBe(`Request for unknown model : ${name}`);
      expect(await rpcCode('TraceSetting', { model_name: name }, KEYS.deployB)).toBe(grpc.status.INVALID_ARGUMENT);
    }
    expect((await call(KEYS.admin, model)).body.trace_rate).toBe('6');

    expect((await call(KEYS.admin, '/v2/trace/setting', { trace_rate: '9' })).body.trace_rate).toBe('9');
    expect((await call(KEYS.admin, '/v2/logging', { log_verbose_level: 0 })).status).toBe(200);
    expect(await rpcCode('LogSettings', { settings: { log_error: { bool_param: true } } }, KEYS.admin)).toBe(
      grpc.status.OK,
    );
  });
});
