/** The embedded default: one JSON file per function under the data dir, written atomically. */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import type { FunctionSpec } from '../../../sdk/spec/function-spec.js';
import { FUNCTION_NAME } from '../../../sdk/spec/function-spec.js';
import type { Deployer, FunctionRecord, FunctionVersion, Registry } from '../registry.js';
import { applyNewVersion, checkedName, notFound } from '../registry.js';
import { RegistryBase } from '../registry-base.js';
import { readRecord } from '../stored-record.js';

export class FsRegistry extends RegistryBase implements Registry {
  readonly kind = 'fs';
  readonly #dir: string;
  /** One node owns the data dir: mutations are serialised in-process. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(dataDir: string) {
    super();
    this.#dir = join(dataDir, 'registry');
  }

  #file(name: string): string {
    return join(this.#dir, `${checkedName(name)}.json`);
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(fn, fn);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #write(record: FunctionRecord): Promise<void> {
    await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    const tmp = `${this.#file(record.name)}.${randomUUID()}.tmp`;
    // The node's alone (a runner reads only links to its own artifacts).
    await writeFile(tmp, JSON.stringify(record, null, 2), { mode: 0o600 });
    await rename(tmp, this.#file(record.name));
  }

  async get(name: string): Promise<FunctionRecord | undefined> {
    if (!FUNCTION_NAME.test(name)) return undefined;
    try {
      return readRecord(await readFile(this.#file(name), 'utf8'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async list(): Promise<FunctionRecord[]> {
    const names = (await readdir(this.#dir).catch(() => [] as string[]))
      .filter((f) => f.endsWith('.json'))
      .map((f) => f.slice(0, -5));
    const records = await Promise.all(names.sort().map((n) => this.get(n)));
    return records.filter((r): r is FunctionRecord => r !== undefined);
  }

  createVersion(spec: FunctionSpec, artifacts: FunctionVersion['artifacts'], by?: Deployer): Promise<FunctionVersion> {
    return this.#serial(async () => {
      const { record, version } = applyNewVersion(await this.get(spec.name), spec, artifacts, by);
      await this.#write(record);
      return version;
    });
  }

  protected update(name: string, change: (r: FunctionRecord) => FunctionRecord): Promise<FunctionRecord> {
    return this.#serial(async () => {
      const record = await this.get(name);
      if (!record) throw notFound(name);
      const next = change(record);
      await this.#write(next);
      return next;
    });
  }

  delete(name: string): Promise<boolean> {
    return this.#serial(async () => {
      const existed = (await this.get(name)) !== undefined;
      await rm(this.#file(name), { force: true });
      return existed;
    });
  }

  async close(): Promise<void> {
    await this.#queue;
  }
}
