/**
 * The console's only way to the node: the management API and function URLs, with the API key kept in
 * sessionStorage (asked for when the node answers 401). Nothing here reaches past the public API.
 */
import type { FunctionLogEntry } from '../../sdk/api/schemas.js';
import { readEvents } from '../../sdk/event-stream.js';

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

/** The API's own types (sdk/api) and the SDK's event-stream reader, so the console and the node cannot drift apart. */
export type {
  Catalog,
  CatalogEntry,
  FunctionInfo,
  FunctionListEntry,
  FunctionLogEntry,
  FunctionVersionInfo,
  JobInfo,
  JobList,
  NodeInfo,
  PoolInfo,
  SeriesSample,
} from '../../sdk/api/schemas.js';
export type Scope = 'invoke' | 'deploy' | 'admin';

/** Follows a function's log (server-sent events over fetch, so the key goes in a header). */
export async function followLogs(
  name: string,
  onEntry: (e: FunctionLogEntry) => void,
  signal: AbortSignal,
): Promise<void> {
  const r = await fetch(`/api/v1/functions/${encodeURIComponent(name)}/logs?follow=1&limit=100`, {
    headers: headers(),
    signal,
  });
  if (!r.ok || !r.body) throw new ApiError(r.status, `the log stream answered ${r.status}`);
  for await (const e of readEvents(r.body)) if (e.event === 'log') onEntry(JSON.parse(e.data) as FunctionLogEntry);
}
