/** A function's own log: read back (the last entries) or followed live over server-sent events. */
import type { FunctionLogEntry } from '../api/index.js';
import { LogEntrySchema, LogListSchema } from '../api/index.js';
import { readEvents } from '../event-stream.js';
import type { Transport } from './transport.js';

/** Which entries: of one version, at one level, the last `limit`, from `since` (ms since the epoch). */
export interface LogsOptions {
  version?: number;
  limit?: number;
  since?: number;
  level?: FunctionLogEntry['level'];
}

/** The options' query, after `first` (the follow flag). */
function logQuery(options: LogsOptions, first: Record<string, string> = {}): URLSearchParams {
  const query = new URLSearchParams(first);
  if (options.version !== undefined) query.set('version', String(options.version));
  if (options.level !== undefined) query.set('level', options.level);
  if (options.limit !== undefined) query.set('limit', String(options.limit));
  if (options.since !== undefined) query.set('since', String(options.since));
  return query;
}

const logsPath = (name: string): string => `/api/v1/functions/${encodeURIComponent(name)}/logs`;

export async function logs(node: Transport, name: string, options: LogsOptions): Promise<FunctionLogEntry[]> {
  const query = logQuery(options);
  const q = query.size ? `?${query}` : '';
  return (await node.json(LogListSchema, `${logsPath(name)}${q}`)).entries;
}

export async function* followLogs(
  node: Transport,
  name: string,
  options: LogsOptions & { signal?: AbortSignal },
): AsyncGenerator<FunctionLogEntry> {
  const r = await node.request(`${logsPath(name)}?${logQuery(options, { follow: '1' })}`, {
    ...(options.signal ? { signal: options.signal } : {}),
  });
  try {
    for await (const e of readEvents(r.body as unknown as AsyncIterable<Uint8Array>))
      if (e.event === 'log') yield LogEntrySchema.parse(JSON.parse(e.data));
  } catch (error) {
    if (options.signal?.aborted) return;
    throw error;
  }
}
