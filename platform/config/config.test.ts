import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { loadConfig } from './index.js';

describe('configuration', () => {
  it('reads the secrets key as hex or base64, from the variable or a file, and refuses anything else', () => {
    const hex = 'ab'.repeat(32);
    expect(loadConfig({ HEARTH_SECRETS_KEY: hex }).secretsKey).toEqual(Buffer.from(hex, 'hex'));
    const b64 = Buffer.alloc(32, 7).toString('base64');
    expect(loadConfig({ HEARTH_SECRETS_KEY: b64 }).secretsKey).toEqual(Buffer.alloc(32, 7));
    const dir = mkdtempSync(join(tmpdir(), 'hearth-secrets-key-'));
    try {
      writeFileSync(join(dir, 'key'), `${hex}\n`);
      expect(loadConfig({ HEARTH_SECRETS_KEY_FILE: join(dir, 'key') }).secretsKey).toEqual(Buffer.from(hex, 'hex'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(loadConfig({}).secretsKey).toBeUndefined();
    expect(() => loadConfig({ HEARTH_SECRETS_KEY: 'short' })).toThrow(/HEARTH_SECRETS_KEY must be 32 bytes/);
  });

  it('has the defaults of the embedded single-node setup', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      httpPort: 8000,
      grpcPort: 8001,
      metricsPort: 8002,
      host: '127.0.0.1',
      dataDir: './.hearth',
      apiKeys: [],
    });
    expect(c.redisUrl).toBeUndefined();
    expect(c.s3).toBeUndefined();
    expect(c.maxBodyBytes).toBe(64 * 2 ** 20);
  });

  it("gives the runners the node's memory less its reserve, and refuses a reserve that leaves nothing", () => {
    expect(loadConfig({ HEARTH_NODE_MEMORY_MB: '3072', HEARTH_NODE_RESERVED_MB: '512' }).runnerMemoryBudgetMb).toBe(
      2560,
    );
    // Default reserve: a tenth, at least 1024 MiB, at most a quarter.
    expect(loadConfig({ HEARTH_NODE_MEMORY_MB: '65536' }).runnerMemoryBudgetMb).toBe(65536 - 6553);
    expect(loadConfig({ HEARTH_NODE_MEMORY_MB: '8192' }).runnerMemoryBudgetMb).toBe(8192 - 1024);
    expect(loadConfig({ HEARTH_NODE_MEMORY_MB: '2048' }).runnerMemoryBudgetMb).toBe(2048 - 512);
    expect(() => loadConfig({ HEARTH_NODE_MEMORY_MB: '2048', HEARTH_NODE_RESERVED_MB: '2048' })).toThrow(
      /HEARTH_NODE_RESERVED_MB \(2048\) leaves nothing of HEARTH_NODE_MEMORY_MB \(2048\) to runners/,
    );
    expect(() => loadConfig({ HEARTH_NODE_MEMORY_MB: 'lots' })).toThrow(
      /HEARTH_NODE_MEMORY_MB must be a number of MiB/,
    );
  });

  it('maps caller-named shared memory only on a loopback bind, unless told otherwise', () => {
    expect(loadConfig({}).systemSharedMemory).toBe(true);
    expect(loadConfig({ HEARTH_HOST: '0.0.0.0', HEARTH_API_KEYS: 'admin-key-456:admin' }).systemSharedMemory).toBe(
      false,
    );
    expect(
      loadConfig({ HEARTH_HOST: '0.0.0.0', HEARTH_API_KEYS: 'admin-key-456:admin', HEARTH_SYSTEM_SHARED_MEMORY: 'on' })
        .systemSharedMemory,
    ).toBe(true);
    expect(loadConfig({ HEARTH_SYSTEM_SHARED_MEMORY: 'off' }).systemSharedMemory).toBe(false);
    expect(() => loadConfig({ HEARTH_SYSTEM_SHARED_MEMORY: 'yes' })).toThrow(/HEARTH_SYSTEM_SHARED_MEMORY/);
  });

  it('names the variable in each error', () => {
    expect(() => loadConfig({ HEARTH_HTTP_PORT: 'eighty' })).toThrow(
      /HEARTH_HTTP_PORT: HEARTH_HTTP_PORT must be a port number/,
    );
    expect(() => loadConfig({ HEARTH_GRPC_PORT: '70000' })).toThrow(/HEARTH_GRPC_PORT/);
    expect(() => loadConfig({ REDIS_URL: 'localhost:6379' })).toThrow(/REDIS_URL must start with redis:\/\//);
    expect(() => loadConfig({ HEARTH_S3_BUCKET: 'Bad_Bucket' })).toThrow(/HEARTH_S3_BUCKET/);
    expect(() => loadConfig({ HEARTH_S3_PREFIX: 'models' })).toThrow(/HEARTH_S3_PREFIX must be empty or end with "\/"/);
    expect(() => loadConfig({ HEARTH_API_KEYS: 'short:admin' })).toThrow(/HEARTH_API_KEYS/);
  });

  it('takes port 0 (a free port), API keys with scopes, and S3 settings', () => {
    const c = loadConfig({
      HEARTH_HTTP_PORT: '0',
      HEARTH_API_KEYS: 'invoke-key-123:invoke, admin-key-456:admin,plainkey-789',
      HEARTH_S3_BUCKET: 'models',
      HEARTH_S3_ENDPOINT: 'http://127.0.0.1:9000',
      HEARTH_S3_PREFIX: 'team/a/',
    });
    expect(c.httpPort).toBe(0);
    expect(c.apiKeys).toEqual([
      { key: 'invoke-key-123', scope: 'invoke', tenant: 'default' },
      { key: 'admin-key-456', scope: 'admin', tenant: 'default' },
      { key: 'plainkey-789', scope: 'admin', tenant: 'default' },
    ]);
    expect(c.s3).toEqual({
      bucket: 'models',
      endpoint: 'http://127.0.0.1:9000',
      region: 'us-east-1',
      prefix: 'team/a/',
    });
  });

  it('refuses to bind beyond loopback without API keys unless explicitly allowed', () => {
    expect(() => loadConfig({ HEARTH_HOST: '0.0.0.0' })).toThrow(/no API key is set.*HEARTH_ALLOW_ANONYMOUS=1/);
    const open = loadConfig({ HEARTH_HOST: '0.0.0.0', HEARTH_ALLOW_ANONYMOUS: '1' });
    expect(open.host).toBe('0.0.0.0');
    // Served beyond loopback on purpose: the Host check would refuse every remote caller.
    expect(open.loopbackGuard).toBe(false);
    expect(loadConfig({}).loopbackGuard).toBe(true);
    expect(loadConfig({ HEARTH_HOST: '0.0.0.0', HEARTH_API_KEYS: 'admin-key-456:admin' }).host).toBe('0.0.0.0');
    expect(loadConfig({ HEARTH_HOST: '::1' }).host).toBe('::1');
  });

  it('reads keys from HEARTH_API_KEYS_FILE (as a Kubernetes Secret mounts them), one per line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-keys-'));
    try {
      const file = join(dir, 'api-keys');
      writeFileSync(file, '# operators\nadmin-key-456:admin\n\ninvoke-key-123:invoke # the web app\n');
      const c = loadConfig({ HEARTH_HOST: '0.0.0.0', HEARTH_API_KEYS_FILE: file, HEARTH_API_KEYS: 'plainkey-789' });
      expect(c.apiKeys).toEqual([
        { key: 'plainkey-789', scope: 'admin', tenant: 'default' },
        { key: 'admin-key-456', scope: 'admin', tenant: 'default' },
        { key: 'invoke-key-123', scope: 'invoke', tenant: 'default' },
      ]);
      expect(c.loopbackGuard).toBe(false);
      writeFileSync(file, '# nothing yet\n');
      expect(() => loadConfig({ HEARTH_API_KEYS_FILE: file })).toThrow(/HEARTH_API_KEYS_FILE: .* holds no key/);
      writeFileSync(file, 'short:admin\n');
      expect(() => loadConfig({ HEARTH_API_KEYS_FILE: file })).toThrow(/HEARTH_API_KEYS_FILE: each entry/);
      expect(() => loadConfig({ HEARTH_API_KEYS_FILE: join(dir, 'missing') })).toThrow(/cannot read .*ENOENT/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gives each key a tenant: KEY:SCOPE@TENANT, or a YAML/JSON keys file with invoke keys limited to functions', () => {
    expect(loadConfig({ HEARTH_API_KEYS: 'deploy-key-a1:deploy@team-a,invoke-key-a1:invoke@team-a' }).apiKeys).toEqual([
      { key: 'deploy-key-a1', scope: 'deploy', tenant: 'team-a' },
      { key: 'invoke-key-a1', scope: 'invoke', tenant: 'team-a' },
    ]);
    expect(() => loadConfig({ HEARTH_API_KEYS: 'deploy-key-a1:deploy@Team_A' })).toThrow(
      /HEARTH_API_KEYS: each entry must be KEY:SCOPE or KEY:SCOPE@TENANT.*tenant.*at "dep…"/,
    );
    expect(() => loadConfig({ HEARTH_API_KEYS: 'deploy-key-a1:owner' })).toThrow(/scope of invoke, shm, deploy, admin/);
    // What would not hold as it reads is refused: an admin of one tenant (admins reach all), a key
    // naming a tenant but no scope (once an admin key whose text held the tenant).
    expect(() => loadConfig({ HEARTH_API_KEYS: 'admin-key-a1:admin@team-a' })).toThrow(
      /tenant: an admin key reaches every tenant/,
    );
    expect(() => loadConfig({ HEARTH_API_KEYS: 'forgot-scope-1@team-a' })).toThrow(/HEARTH_API_KEYS: each entry/);
    const dir = mkdtempSync(join(tmpdir(), 'hearth-keys-'));
    try {
      const file = join(dir, 'keys.yaml');
      writeFileSync(
        file,
        [
          '# two teams on one node',
          'keys:',
          '  - { key: ops-admin-key-1, scope: admin }',
          '  - { key: team-a-deploy-1, scope: deploy, tenant: team-a }',
          '  - key: team-a-webapp-1',
          '    scope: invoke',
          '    tenant: team-a',
          '    functions: [resnet, mlp]',
        ].join('\n'),
      );
      expect(loadConfig({ HEARTH_API_KEYS_FILE: file }).apiKeys).toEqual([
        { key: 'ops-admin-key-1', scope: 'admin', tenant: 'default' },
        { key: 'team-a-deploy-1', scope: 'deploy', tenant: 'team-a' },
        { key: 'team-a-webapp-1', scope: 'invoke', tenant: 'team-a', functions: ['resnet', 'mlp'] },
      ]);
      writeFileSync(file, JSON.stringify({ keys: [{ key: 'team-b-deploy-1', scope: 'deploy', tenant: 'team-b' }] }));
      expect(loadConfig({ HEARTH_API_KEYS_FILE: file }).apiKeys).toEqual([
        { key: 'team-b-deploy-1', scope: 'deploy', tenant: 'team-b' },
      ]);
      // Refused, naming what is wrong and never the key: a field it does not know, a key twice, a bad function name.
      writeFileSync(file, 'keys:\n  - { key: team-b-deploy-1, scope: deploy, tennant: b }\n');
      expect(() => loadConfig({ HEARTH_API_KEYS_FILE: file })).toThrow(/HEARTH_API_KEYS_FILE: .*at entry 1/);
      writeFileSync(
        file,
        'keys:\n  - { key: team-b-deploy-1, scope: deploy }\n  - { key: team-b-deploy-1, scope: invoke }\n',
      );
      expect(() => loadConfig({ HEARTH_API_KEYS_FILE: file })).toThrow(/lists a key twice/);
      // A deploy key manages all its tenant has: one that names functions would not hold to them.
      writeFileSync(file, 'keys:\n  - { key: team-b-deploy-1, scope: deploy, tenant: b, functions: [f] }\n');
      expect(() => loadConfig({ HEARTH_API_KEYS_FILE: file })).toThrow(
        /functions: only an invoke or shm key names functions/,
      );
      writeFileSync(file, 'keys:\n  - { key: team-b-invoke-1, scope: invoke, functions: ["../x"] }\n');
      expect(() => loadConfig({ HEARTH_API_KEYS_FILE: file })).toThrow(/functions\.0: not a function name/);
      expect(() => loadConfig({ HEARTH_API_KEYS_FILE: file })).not.toThrow(/team-b-invoke-1/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('takes TLS files in pairs, and a client CA only with them', () => {
    expect(() => loadConfig({ HEARTH_TLS_CERT: '/x.crt' })).toThrow(/HEARTH_TLS_CERT and HEARTH_TLS_KEY go together/);
    expect(() => loadConfig({ HEARTH_TLS_CLIENT_CA: '/ca.crt' })).toThrow(/mutual TLS is TLS first/);
    expect(
      loadConfig({ HEARTH_TLS_CERT: '/x.crt', HEARTH_TLS_KEY: '/x.key', HEARTH_TLS_CLIENT_CA: '/ca.crt' }).tls,
    ).toEqual({
      certFile: '/x.crt',
      keyFile: '/x.key',
      clientCaFile: '/ca.crt',
    });
    expect(loadConfig({}).tls).toBeUndefined();
  });
});
