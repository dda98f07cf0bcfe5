/** The key that seals secrets, from HEARTH_SECRETS_KEY or the file HEARTH_SECRETS_KEY_FILE names. */
import { readFileSync } from 'node:fs';

import { InvalidInputError } from '../../sdk/errors.js';

/** A configured key: 64 hex characters, or base64 of 32 bytes. */
export function parseSecretsKey(text: string, where: string): Buffer {
  const t = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, 'hex') : Buffer.from(t, 'base64');
  if (key.length !== 32)
    throw new InvalidInputError(
      `${where} must be 32 bytes as 64 hex characters or base64 (make one with \`openssl rand -hex 32\`)`,
    );
  return key;
}

/** The key that seals secrets: HEARTH_SECRETS_KEY, or the file HEARTH_SECRETS_KEY_FILE names. */
export function secretsKey(text: string | undefined, file: string | undefined): Buffer | undefined {
  if (text) return parseSecretsKey(text, 'HEARTH_SECRETS_KEY');
  if (!file) return undefined;
  let read: string;
  try {
    read = readFileSync(file, 'utf8');
  } catch (error) {
    throw new InvalidInputError(
      `HEARTH_SECRETS_KEY_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code})`,
    );
  }
  return parseSecretsKey(read, `HEARTH_SECRETS_KEY_FILE (${file})`);
}
