/**
 * Secrets: values a function's hook reads as `ctx.secrets.NAME`, for the functions whose spec lists
 * NAME only. Stored sealed (AES-256-GCM, the name as associated data, so a value moved under another
 * name does not open) with the node's key: HEARTH_SECRETS_KEY (or _FILE), or — embedded default only —
 * a key the node makes once under its data dir. Values leave this module for one place: a pool's
 * load, in memory, to its hook's context. Never an environment, a log line or an API response.
 *
 * Each secret is a tenant's: stored as `TENANT/NAME` (the default tenant's as `NAME`, as before
 * tenants), listed, set and bound by its tenant only — a spec that lists NAME binds its own
 * tenant's NAME, whatever another tenant keeps under the same name.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

import { ConflictError, InvalidInputError } from '../../sdk/errors.js';
import { SECRET_NAME } from '../../sdk/spec/function-spec.js';
import { DEFAULT_TENANT } from '../config/index.js';

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
/** Secrets a tenant keeps at most. */
export const MAX_SECRETS = 1000;

export class SecretStore {
  readonly #backend: SecretBackend;
  readonly #key: () => Promise<Buffer>;

  /** `key`: the 32-byte key, or how to get it (it may refuse: no key configured). */
  constructor(backend: SecretBackend, key: () => Promise<Buffer>) {
    this.#backend = backend;
    this.#key = key;
  }

  async set(tenant: string, name: string, value: string): Promise<SecretInfo> {
    checkName(name);
    if (Buffer.byteLength(value) > MAX_SECRET_BYTES)
      throw new InvalidInputError(`a secret's value is at most ${MAX_SECRET_BYTES} bytes`);
    const stored = storedName(tenant, name);
    const [existing] = await this.#backend.getMany([stored]);
    if (!existing && (await this.list(tenant)).length >= MAX_SECRETS)
      throw new ConflictError(`a tenant keeps ${MAX_SECRETS} secrets at most: remove one first (hearth secrets rm)`);
    const key = await this.#key();
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(stored));
    const body = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    const sealed = {
      v: Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64'),
      updatedAt: new Date().toISOString(),
    };
    await this.#backend.put(stored, sealed);
    return { name, updatedAt: sealed.updatedAt };
  }

  /** The tenant's names and times only. */
  async list(tenant: string): Promise<SecretInfo[]> {
    const mine = [];
    for (const { name: stored, sealed } of await this.#backend.list()) {
      const name = nameIn(tenant, stored);
      if (name !== undefined) mine.push({ name, updatedAt: sealed.updatedAt });
    }
    return mine.sort((a, b) => a.name.localeCompare(b.name));
  }

  async delete(tenant: string, name: string): Promise<boolean> {
    checkName(name);
    return this.#backend.delete(storedName(tenant, name));
  }

  /**
   * The values of `names` (a spec's list) in `tenant`'s secrets, for a pool's hook; a name the
   * tenant has not set is the deploy's error.
   */
  async resolve(tenant: string, names: readonly string[]): Promise<Record<string, string>> {
    if (names.length === 0) return {};
    const stored = names.map((n) => storedName(tenant, n));
    const sealed = await this.#backend.getMany(stored);
    const missing = names.filter((_, i) => !sealed[i]);
    if (missing.length > 0)
      throw new ConflictError(
        `the spec lists secret(s) ${missing.join(', ')} that this ${tenant === DEFAULT_TENANT ? 'node' : `tenant (${tenant})`} does not have: set them with \`hearth secrets set ${missing[0]}\``,
        { reason: 'secrets' },
      );
    const key = await this.#key();
    const values: Record<string, string> = {};
    names.forEach((name, i) => {
      const raw = Buffer.from(sealed[i]!.v, 'base64');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      decipher.setAAD(Buffer.from(stored[i]!));
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

/** Where a tenant's secret is stored: `TENANT/NAME`, the default tenant's as `NAME` (a name has no '/'). */
function storedName(tenant: string, name: string): string {
  return tenant === DEFAULT_TENANT ? name : `${tenant}/${name}`;
}

/** A stored name's own name if it is `tenant`'s, else undefined. */
function nameIn(tenant: string, stored: string): string | undefined {
  const slash = stored.indexOf('/');
  if (tenant === DEFAULT_TENANT) return slash === -1 ? stored : undefined;
  return slash !== -1 && stored.slice(0, slash) === tenant ? stored.slice(slash + 1) : undefined;
}

function checkName(name: string): void {
  if (!SECRET_NAME.test(name))
    throw new InvalidInputError(
      `"${name.slice(0, 80)}" is not a secret name: upper case letters, digits and _, starting with a letter or _ (at most 64)`,
    );
}
