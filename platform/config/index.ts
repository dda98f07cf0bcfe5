/**
 * The node's configuration: the environment variables it reads (ConfigSchema), validated into a
 * Config by loadConfig, with API keys and the secrets' sealing key read from their variables or files.
 */
export type { ApiKey } from './api-keys.js';
export { DEFAULT_TENANT, TENANT_NAME } from './api-keys.js';
export type { Config, TlsFiles } from './config.js';
export { loadConfig } from './load-config.js';
export { ConfigSchema } from './schema.js';
export { parseSecretsKey } from './secrets-key.js';
