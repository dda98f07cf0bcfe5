/** The secret store chosen by configuration: a file under the data dir, or a Redis hash. */

import { ConflictError } from '../../sdk/errors.js';
import type { Config } from '../config/index.js';
import { commandConnection } from '../redis/index.js';
import { FsSecrets, localKey, RedisSecrets } from './backends.js';
import { SecretStore } from './secrets.js';

export { FsSecrets, RedisSecrets } from './backends.js';
export * from './secrets.js';

export function createSecretStore(config: Config): { store: SecretStore; close(): Promise<void> } {
  const configured = config.secretsKey;
  if (!config.redisUrl) {
    let key: Promise<Buffer> | undefined = configured ? Promise.resolve(configured) : undefined;
    const getKey = () => {
      key ??= localKey(config.dataDir);
      return key;
    };
    return {
      store: new SecretStore(new FsSecrets(config.dataDir), getKey),
      close: async () => undefined,
    };
  }
  const redis = commandConnection(config.redisUrl);
  redis.on('error', () => undefined);
  const noKey = () =>
    Promise.reject(
      new ConflictError(
        'secrets need HEARTH_SECRETS_KEY (or HEARTH_SECRETS_KEY_FILE) on a node with Redis: the same key on every node (make one with `openssl rand -hex 32`)',
      ),
    );
  return {
    store: new SecretStore(
      new RedisSecrets(redis, config.redisPrefix),
      configured ? () => Promise.resolve(configured) : noKey,
    ),
    close: async () => {
      redis.disconnect();
    },
  };
}
