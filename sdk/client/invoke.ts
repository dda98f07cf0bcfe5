/** Function URLs: a call that waits for its response, and an async one that answers with a job. */
import type { JobAccepted } from '../api/index.js';
import { JobAcceptedSchema } from '../api/index.js';
import type { Transport } from './transport.js';

export interface InvokeOptions {
  version?: number;
  /** Milliseconds the node may take (Hearth-Timeout-Ms). */
  timeoutMs?: number;
  idempotencyKey?: string;
  /** Defaults to application/json for objects and strings, application/octet-stream for bytes. */
  contentType?: string;
}

export interface InvokeResult {
  status: number;
  contentType: string;
  version: number;
  body: Uint8Array;
  /** The body as JSON (throws if it is not). */
  json<T = unknown>(): T;
  text(): string;
}

function toBody(data: unknown, contentType?: string): { body: Uint8Array | string; type: string } {
  if (data instanceof Uint8Array) return { body: data, type: contentType ?? 'application/octet-stream' };
  if (typeof data === 'string') return { body: data, type: contentType ?? 'application/json' };
  return { body: JSON.stringify(data), type: contentType ?? 'application/json' };
}

function invokeHeaders(contentType: string, options: InvokeOptions): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': contentType };
  if (options.timeoutMs !== undefined) headers['hearth-timeout-ms'] = String(options.timeoutMs);
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  return headers;
}

const functionUrl = (name: string, version?: number): string =>
  `/fn/${encodeURIComponent(name)}${version === undefined ? '' : `/versions/${version}`}`;

export async function invoke(
  node: Transport,
  name: string,
  data: unknown,
  options: InvokeOptions,
): Promise<InvokeResult> {
  const { body, type } = toBody(data, options.contentType);
  const r = await node.request(functionUrl(name, options.version), {
    method: 'POST',
    body,
    headers: invokeHeaders(type, options),
  });
  const bytes = new Uint8Array(await r.arrayBuffer());
  const text = () => new TextDecoder().decode(bytes);
  return {
    status: r.status,
    contentType: r.headers.get('content-type') ?? '',
    version: Number(r.headers.get('hearth-version')),
    body: bytes,
    text,
    json: <T>() => JSON.parse(text()) as T,
  };
}

export function invokeAsync(
  node: Transport,
  name: string,
  data: unknown,
  options: InvokeOptions & { webhook?: string },
): Promise<JobAccepted> {
  const { body, type } = toBody(data, options.contentType);
  const headers = {
    ...invokeHeaders(type, options),
    prefer: 'respond-async',
    ...(options.webhook ? { 'hearth-webhook-url': options.webhook } : {}),
  };
  return node.json(JobAcceptedSchema, functionUrl(name, options.version), { method: 'POST', body, headers });
}
