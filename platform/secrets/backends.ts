/** Where sealed secrets live: one file (mode 0600) under the data dir, or one Redis hash. */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

import type { Redis } from 'ioredis';

import type { Sealed, SecretBackend } from './secrets.js';

export class FsSecrets implements SecretBackend {
  readonly #file: string;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(dataDir: string) {
    this.#file = join(dataDir, 'secrets', 'secrets.json');
  }

  async #read(): Promise<Record<string, Sealed>> {
    try {
      return JSON.parse(await readFile(this.#file, 'utf8')) as Record<string, Sealed>;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw error;
    }
  }

  /** Read, change, write atomically; one node owns the data dir, so changes queue in-process. */
  #change<T>(fn: (all: Record<string, Sealed>) => T): Promise<T> {
    const next = this.#queue.then(async () => {
      const all = await this.#read();
      const result = fn(all);
      await mkdir(dirname(this.#file), { recursive: true, mode: 0o700 });
      const tmp = `${this.#file}.${randomUUID()}.tmp`;
      await writeFile(tmp, JSON.stringify(all), { mode: 0o600 });
      await rename(tmp, this.#file);
      return result;
    });
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async getMany(names: readonly string[]): Promise<(Sealed | undefined)[]> {
    const all = await this.#read();
    return names.map((n) => (Object.hasOwn(all, n) ? all[n] : undefined));
  }

  put(name: string, sealed: Sealed): Promise<void> {
    return this.#change((all) => {
      all[name] = sealed;
    });
  }

  delete(name: string): Promise<boolean> {
    return this.#change((all) => {
      const had = Object.hasOwn(all, name);
      delete all[name];
      return had;
    });
  }

  async list(): Promise<{ name: string; sealed: Sealed }[]> {
    return Object.entries(await this.#read()).map(([name, sealed]) => ({ name, sealed }));
  }

  async count(): Promise<number> {
    return Object.keys(await this.#read()).length;
  }
}

/**
 * The embedded default's key when none is configured: 32 random bytes made once, mode 0600, beside
 * the sealed values' folder. A cluster shares HEARTH_SECRETS_KEY instead (see createSecretStore).
 */
export async function localKey(dataDir: string): Promise<Buffer> {
  const file = join(dataDir, 'secrets', 'secrets.key');
  try {
    return Buffer.from((await readFile(file, 'utf8')).trim(), 'hex');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  // `wx`: of two first uses at once, one writes and both read what it wrote.
  await writeFile(file, key.toString('hex'), { mode: 0o600, flag: 'wx' }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
  return Buffer.from((await readFile(file, 'utf8')).trim(), 'hex');
}

export class RedisSecrets implements SecretBackend {
  readonly #redis: Redis;
  readonly #key: string;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#key = `${prefix}secrets`;
  }

  async getMany(names: readonly string[]): Promise<(Sealed | undefined)[]> {
    const raws = await this.#redis.hmget(this.#key, ...names);
    return raws.map((r) => (r === null ? undefined : (JSON.parse(r) as Sealed)));
  }

  async put(name: string, sealed: Sealed): Promise<void> {
    await this.#redis.hset(this.#key, name, JSON.stringify(sealed));
  }

  async delete(name: string): Promise<boolean> {
    return (await this.#redis.hdel(this.#key, name)) > 0;
  }

  async list(): Promise<{ name: string; sealed: Sealed }[]> {
    return Object.entries(await this.#redis.hgetall(this.#key)).map(([name, raw]) => ({
      name,
      sealed: JSON.parse(raw) as Sealed,
    }));
  }

  count(): Promise<number> {
    return this.#redis.hlen(this.#key);
  }
}
