/**
 * Secrets: values a function's hook reads as `ctx.secrets.NAME`, for the functions whose spec lists
 * NAME only. Stored sealed (AES-256-GCM, the name as associated data, so a value moved under another
 * name does not open) with the node's key: HEARTH_SECRETS_KEY (or _FILE), or — embedded default only —
 * a key the node makes once under its data dir. Values leave this module for one place: a pool's
 * load, in memory, to its hook's context. Never an environment, a log line or an API response.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

import { ConflictError, InvalidInputError } from '../../sdk/errors.js';
import { SECRET_NAME } from '../../sdk/spec/function-spec.js';

export interface SecretInfo {
  name: string;
  updatedAt: string;
}

/** A sealed value as a backend keeps it. */
export interface Sealed {
  /** base64 of iv (12) | tag (16) | ciphertext. */
  v: string;
  updatedAt: string;
}

/** Where sealed values live: a file under the data dir, or a Redis hash. */
export interface SecretBackend {
  getMany(names: readonly string[]): Promise<(Sealed | undefined)[]>;
  put(name: string, sealed: Sealed): Promise<void>;
  delete(name: string): Promise<boolean>;
  list(): Promise<{ name: string; sealed: Sealed }[]>;
  count(): Promise<number>;
}

/** Longest value (a certificate chain or a service-account JSON fits). */
export const MAX_SECRET_BYTES = 64 * 1024;
/** Secrets a node keeps at most. */
export const MAX_SECRETS = 1000;

export class SecretStore {
  readonly #backend: SecretBackend;
  readonly #key: () => Promise<Buffer>;

  /** `key`: the 32-byte key, or how to get it (it may refuse: no key configured). */
  constructor(backend: SecretBackend, key: () => Promise<Buffer>) {
    this.#backend = backend;
    this.#key = key;
  }

  async set(name: string, value: string): Promise<SecretInfo> {
    checkName(name);
    if (Buffer.byteLength(value) > MAX_SECRET_BYTES)
      throw new InvalidInputError(`a secret's value is at most ${MAX_SECRET_BYTES} bytes`);
    const [existing] = await this.#backend.getMany([name]);
    if (!existing && (await this.#backend.count()) >= MAX_SECRETS)
      throw new ConflictError(`this node keeps ${MAX_SECRETS} secrets at most: remove one first (hearth secrets rm)`);
    const key = await this.#key();
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(name));
    const body = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    const sealed = {
      v: Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64'),
      updatedAt: new Date().toISOString(),
    };
    await this.#backend.put(name, sealed);
    return { name, updatedAt: sealed.updatedAt };
  }

  /** Names and times only. */
  async list(): Promise<SecretInfo[]> {
    return (await this.#backend.list())
      .map(({ name, sealed }) => ({ name, updatedAt: sealed.updatedAt }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  async delete(name: string): Promise<boolean> {
    checkName(name);
    return this.#backend.delete(name);
  }

  /** The values of `names` (a spec's list), for a pool's hook; a name not set is the deploy's error. */
  async resolve(names: readonly string[]): Promise<Record<string, string>> {
    if (names.length === 0) return {};
    const sealed = await this.#backend.getMany(names);
    const missing = names.filter((_, i) => !sealed[i]);
    if (missing.length > 0)
      throw new ConflictError(
        `the spec lists secret(s) ${missing.join(', ')} that this node does not have: set them with \`hearth secrets set ${missing[0]}\``,
        { reason: 'secrets' },
      );
    const key = await this.#key();
    const values: Record<string, string> = {};
    names.forEach((name, i) => {
      const raw = Buffer.from(sealed[i]!.v, 'base64');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      decipher.setAAD(Buffer.from(name));
      decipher.setAuthTag(raw.subarray(12, 28));
      try {
        values[name] = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
      } catch {
        throw new ConflictError(
          `secret ${name} does not open with this node's key (HEARTH_SECRETS_KEY changed?): set it again with \`hearth secrets set ${name}\``,
          { reason: 'secrets' },
        );
      }
    });
    return values;
  }
}

function checkName(name: string): void {
  if (!SECRET_NAME.test(name))
    throw new InvalidInputError(
      `"${name.slice(0, 80)}" is not a secret name: upper case letters, digits and _, starting with a letter or _ (at most 64)`,
    );
}
