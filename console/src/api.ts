/**
 * The console's only way to the node: the management API and function URLs, with the API key kept in
 * sessionStorage (asked for when the node answers 401). Nothing here reaches past the public API.
 */
const KEY = 'hearth.apiKey';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

export const apiKey = {
  get: (): string | null => sessionStorage.getItem(KEY),
  set: (key: string) => sessionStorage.setItem(KEY, key),
  clear: () => sessionStorage.removeItem(KEY),
};

export function headers(extra: Record<string, string> = {}): Record<string, string> {
  const key = apiKey.get();
  return { ...extra, ...(key ? { authorization: `Bearer ${key}` } : {}) };
}

export async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const r = await fetch(path, { ...init, headers: headers((init.headers as Record<string, string>) ?? {}) });
  const text = await r.text();
  const body = text ? (JSON.parse(text) as { error?: string; code?: string }) : {};
  if (!r.ok) throw new ApiError(r.status, body.error ?? r.statusText, body.code);
  return body as T;
}

export const send = <T>(path: string, method: string, body: unknown) =>
  api<T>(path, { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

export interface FunctionEntry {
  name: string;
  versions: number;
  latest?: number;
  traffic: Record<string, number>;
}

export interface PoolInfo {
  function: string;
  version: number;
  node?: string;
  state: string;
  device?: string;
  instances: { total: number; idle: number; busy: number; loading: number };
  queueDepth: number;
  success: number;
  failure: number;
  latency?: { p50Ms: number; p99Ms: number };
  coldStart?: { queue?: number; fetch: number; load: number; warmup: number };
}

export interface VersionInfo {
  version: number;
  status: string;
  reason?: string;
  createdAt: string;
  spec: {
    inputs: { name: string; dtype: string; dims: number[] }[];
    outputs: { name: string; dtype: string; dims: number[] }[];
    hook?: string;
    maxBatchSize: number;
    scaling: Record<string, number>;
  };
}

export interface FunctionInfo {
  name: string;
  traffic: Record<string, number>;
  previousTraffic?: Record<string, number>;
  versions: VersionInfo[];
  pools: PoolInfo[];
}

/** The API's own types (sdk/api), so the console and the node cannot drift apart. */
export type {
  Catalog,
  CatalogEntry,
  JobInfo,
  JobList,
  NodeInfo,
  SeriesSample as Sample,
} from '../../sdk/api/schemas.js';
export type Scope = 'invoke' | 'admin';

export interface LogEntry {
  at: number;
  version?: number;
  source: string;
  level: string;
  msg: string;
  requestId?: string;
}

/** Follows a function's log (server-sent events over fetch, so the key goes in a header). */
export async function followLogs(name: string, onEntry: (e: LogEntry) => void, signal: AbortSignal): Promise<void> {
  const r = await fetch(`/api/v1/functions/${encodeURIComponent(name)}/logs?follow=1&limit=100`, {
    headers: headers(),
    signal,
  });
  if (!r.ok || !r.body) throw new ApiError(r.status, `the log stream answered ${r.status}`);
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let at = buffer.indexOf('\n\n');
    while (at >= 0) {
      const event = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      const data = event
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart())
        .join('\n');
      if (data && /^event: log$/m.test(event)) onEntry(JSON.parse(data) as LogEntry);
      at = buffer.indexOf('\n\n');
    }
  }
}
