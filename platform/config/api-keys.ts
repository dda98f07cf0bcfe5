/**
 * API keys: HEARTH_API_KEYS (`key1:admin,key2:invoke,key3:shm`), and HEARTH_API_KEYS_FILE (a
 * mounted Kubernetes Secret, say).
 */
import { readFileSync } from 'node:fs';

import { z } from 'zod';

import { InvalidInputError } from '../../sdk/errors.js';

const ApiKey = z.object({ key: z.string().min(8), scope: z.enum(['invoke', 'shm', 'admin']) });
export type ApiKey = z.infer<typeof ApiKey>;

/**
 * `key1:admin,key2:invoke,key3:shm` (a key without a scope is an admin key; `shm` is an invoke key
 * that may also register system shared memory); in a keys file, entries are also
 * separated by new lines and `#` starts a comment.
 */
export function parseApiKeys(value: string | undefined, from = 'HEARTH_API_KEYS'): ApiKey[] {
  if (!value) return [];
  return value
    .replace(/#.*$/gm, '')
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      const at = entry.lastIndexOf(':');
      const [key, scope] = at > 0 ? [entry.slice(0, at), entry.slice(at + 1)] : [entry, 'admin'];
      const parsed = ApiKey.safeParse({ key, scope });
      if (!parsed.success)
        throw new InvalidInputError(
          `${from}: each entry must be KEY:invoke, KEY:shm or KEY:admin with a key of at least 8 characters (got "${entry.replace(/^(.{3}).*/, '$1…')}")`,
        );
      return parsed.data;
    });
}

/** HEARTH_API_KEYS_FILE's keys (a mounted Kubernetes Secret, say); the file must be readable. */
export function keysFile(path: string | undefined): ApiKey[] {
  if (!path) return [];
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new InvalidInputError(`HEARTH_API_KEYS_FILE: cannot read ${path} (${(error as NodeJS.ErrnoException).code})`);
  }
  const keys = parseApiKeys(text, 'HEARTH_API_KEYS_FILE');
  if (keys.length === 0) throw new InvalidInputError(`HEARTH_API_KEYS_FILE: ${path} holds no key`);
  return keys;
}
