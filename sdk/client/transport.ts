/**
 * The client's one door to the node: fetch (over an undici Agent when TLS files are given), the API
 * key, an unreachable node as UnavailableError, error bodies as the typed errors of ../errors.ts in
 * one place (`check`), and answers checked against the API's schemas (`parsed`). Every call of
 * ./*.ts goes through a Transport.
 */
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';

import type { z } from 'zod';

import { errorFromBody, HearthError, UnavailableError } from '../errors.js';

export interface HearthOptions {
  url?: string;
  apiKey?: string;
  /** Replaces the global fetch (tests, proxies). */
  fetch?: typeof fetch;
  /** A CA file (PEM) to trust for an https node, beside the system's (default: HEARTH_CA_FILE). */
  caFile?: string;
  /** Client certificate and key files (PEM) for a node that asks for mutual TLS (HEARTH_CLIENT_CERT, HEARTH_CLIENT_KEY). */
  certFile?: string;
  keyFile?: string;
}

/** What a call may add to fetch's init: its headers as a plain record. */
export type CallInit = RequestInit & { headers?: Record<string, string> };

/**
 * fetch over an undici Agent that trusts the CA file and presents the client certificate given. The
 * files are read now (a missing one fails here); undici is loaded on the first call only, so a
 * client without TLS files (and the CLI's start) never pays for it.
 */
function tlsFetch(files: { ca?: string; cert?: string; key?: string }): typeof fetch {
  const read = (file: string | undefined) => (file === undefined ? undefined : readFileSync(file));
  const connect = {
    ...(files.ca ? { ca: [...rootCertificates, read(files.ca)!.toString()] } : {}),
    ...(files.cert ? { cert: read(files.cert) } : {}),
    ...(files.key ? { key: read(files.key) } : {}),
  };
  let agent: Promise<{ fetch: typeof import('undici').fetch; dispatcher: import('undici').Agent }> | undefined;
  return (async (input: string, init?: RequestInit) => {
    agent ??= import('undici').then((undici) => ({ fetch: undici.fetch, dispatcher: new undici.Agent({ connect }) }));
    const { fetch: undiciFetch, dispatcher } = await agent;
    return undiciFetch(input, { ...(init as object), dispatcher });
  }) as unknown as typeof fetch;
}

/** Turns an error body into the typed error, or a plain HearthError for anything else. */
export async function check(response: Response): Promise<Response> {
  if (response.ok) return response;
  const text = await response.text();
  let body: { error?: string; code?: string } | undefined;
  try {
    body = JSON.parse(text) as { error?: string; code?: string };
  } catch {
    body = undefined;
  }
  if (body && typeof body.error === 'string' && typeof body.code === 'string')
    throw errorFromBody({ error: body.error, code: body.code });
  throw new HearthError(`HTTP ${response.status}: ${text.slice(0, 200) || response.statusText}`);
}

/** A response body checked against the API's schema (sdk/api): a node that answers otherwise is refused. */
export function parsed<S extends z.ZodType>(schema: S, body: unknown, what: string): z.infer<S> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  throw new HearthError(
    `the node's answer to ${what} does not match the API: ${result.error.issues[0]?.message ?? 'unknown'}`,
  );
}

/** The node a client talks to: its URL, the key it sends, and the fetch it sends with. */
export class Transport {
  readonly url: string;
  readonly #apiKey: string | undefined;
  readonly #fetch: typeof fetch;

  constructor(options: HearthOptions) {
    this.url = (options.url ?? process.env.HEARTH_URL ?? 'http://127.0.0.1:8000').replace(/\/+$/, '');
    this.#apiKey = options.apiKey ?? process.env.HEARTH_API_KEY;
    const ca = options.caFile ?? process.env.HEARTH_CA_FILE;
    const cert = options.certFile ?? process.env.HEARTH_CLIENT_CERT;
    const key = options.keyFile ?? process.env.HEARTH_CLIENT_KEY;
    this.#fetch = options.fetch ?? (ca || cert || key ? tlsFetch({ ca, cert, key }) : fetch);
  }

  /** Whether the node answers ready (asked without the key); false when it cannot be reached. */
  async ready(): Promise<boolean> {
    const r = await this.#fetch(`${this.url}/v2/health/ready`).catch(() => undefined);
    return r?.status === 200;
  }

  /** One call with the API key; UnavailableError when the node cannot be reached. Any status. */
  async send(path: string, init: CallInit = {}): Promise<Response> {
    const headers: Record<string, string> = { ...(init.headers ?? {}) };
    if (this.#apiKey) headers.authorization = `Bearer ${this.#apiKey}`;
    try {
      return await this.#fetch(`${this.url}${path}`, { ...init, headers });
    } catch (cause) {
      throw new UnavailableError(
        `cannot reach Hearth at ${this.url}: ${(cause as Error).cause instanceof Error ? ((cause as Error).cause as Error).message : (cause as Error).message}`,
        { cause },
      );
    }
  }

  /** One call whose error statuses become typed errors. */
  async request(path: string, init: CallInit = {}): Promise<Response> {
    return check(await this.send(path, init));
  }

  /** One call whose answer is JSON of `schema`. */
  async json<S extends z.ZodType>(schema: S, path: string, init?: CallInit): Promise<z.infer<S>> {
    return parsed(schema, await (await this.request(path, init)).json(), `${init?.method ?? 'GET'} ${path}`);
  }

  /** One call with a JSON body whose answer is JSON of `schema`. */
  post<S extends z.ZodType>(schema: S, path: string, body: unknown, method = 'POST'): Promise<z.infer<S>> {
    return this.json(schema, path, {
      method,
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    });
  }
}
