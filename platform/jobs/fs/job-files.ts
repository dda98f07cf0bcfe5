/**
 * The embedded queue's files in its folder (the data dir's `jobs/`). Until a job finishes, `ID.job`
 * — the record as accepted (one JSON line) and then the body's bytes, written once — and from its
 * first change of state `ID.json`, the record as it is now (JSON, a result's body as base64).
 */
import { readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import type { JobRecord } from '../jobs.js';
import { decodeRecord } from '../jobs.js';

export const recordFile = (dir: string, id: string): string => join(dir, `${id}.json`);
export const acceptedFile = (dir: string, id: string): string => join(dir, `${id}.job`);
/** Job ids are UUIDs or `idem-` and hex (jobId): only such names are read back as jobs. */
const JOB_FILE =
  /^((?:idem-[0-9a-f]{32})|(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}))\.(?:json|job)$/;
const NEWLINE = 0x0a;

/** `data` in place of `path` whole or not at all (a temporary file renamed over it). */
export async function writeAtomic(path: string, data: string | Uint8Array): Promise<void> {
  const tmp = `${path}.tmp`;
  await writeFile(tmp, data, { mode: 0o600 });
  await rename(tmp, path);
}

/** An accepted file's bytes: the record as accepted (its JSON line), then the body. */
export function acceptedBytes(header: string, body: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(`${header}\n`), body]);
}

/** The ids of the jobs whose files the folder holds. */
export async function jobIds(dir: string): Promise<Set<string>> {
  return new Set((await readdir(dir)).flatMap((n) => JOB_FILE.exec(n)?.[1] ?? []));
}

/** A job read back from its files. */
export interface StoredJob {
  /** The record as last written, else as accepted. */
  record: JobRecord & { contentType?: string };
  /** Whether its accepted file is still there (the job had not finished, or its removal was cut short). */
  accepted: boolean;
  /** The body as accepted; absent when the accepted file is gone or holds no record line. */
  body?: Uint8Array;
  /** The content type the accepted record names (a record written in place may lack it). */
  acceptedType(): string | undefined;
}

/**
 * Reads a job's files: its record — the one written in place, else the accepted one — and its body.
 * Undefined when neither record can be read as this job's; `onUnreadable` hears each that cannot.
 */
export async function readJob(
  dir: string,
  id: string,
  onUnreadable: (error: Error) => void,
): Promise<StoredJob | undefined> {
  const accepted = await readFile(acceptedFile(dir, id)).catch(() => undefined);
  const split = accepted?.indexOf(NEWLINE) ?? -1;
  const header = accepted && split > 0 ? accepted.subarray(0, split).toString('utf8') : undefined;
  let record: StoredJob['record'] | undefined;
  for (const text of [() => readFile(recordFile(dir, id), 'utf8'), async () => header]) {
    const found = await text().catch(() => undefined);
    if (found === undefined) continue;
    try {
      record = decodeRecord(found);
      break;
    } catch (error) {
      onUnreadable(error as Error);
    }
  }
  if (record?.id !== id) return undefined;
  return {
    record,
    accepted: accepted !== undefined,
    ...(accepted && split > 0 ? { body: accepted.subarray(split + 1) } : {}),
    acceptedType: () => {
      try {
        return (decodeRecord(header ?? '') as { contentType?: string }).contentType;
      } catch {
        return undefined;
      }
    },
  };
}
