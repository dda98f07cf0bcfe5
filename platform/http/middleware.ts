/** What every hono route of the node shares: the caller's key, body limits, the error reply. */
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';

import type { Caller, Scope } from '../caller/index.js';
import { authorize, NO_KEYS } from '../caller/index.js';
import type { ApiKey } from '../config/index.js';
import type { Logger } from '../log/index.js';
import { toHttpResponse } from './errors.js';
import { tooLarge } from './hot/index.js';

/** What auth() leaves on a request: its caller (the default tenant's admin with no keys configured). */
export type AppEnv = { Variables: { caller: Caller } };

export function errorResponse(c: Context, error: unknown, log?: Logger): Response {
  const { status, body, headers } = toHttpResponse(error, { requestId: c.req.header('x-request-id'), log });
  for (const [k, v] of Object.entries(headers)) c.header(k, v);
  return c.json(body, status as 400);
}

export function auth(keys: ApiKey[], scope: Scope): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set(
      'caller',
      authorize(keys, scope, (name) => c.req.header(name)),
    );
    return next();
  };
}

/** The request's caller (after auth() ran). */
export function callerOf(c: Context<AppEnv>): Caller {
  return c.get('caller') ?? NO_KEYS;
}

/** Who the request acts as, where a tenant owns what it makes: its tenant, and whether it may act for any. */
export function deployerOf(c: Context<AppEnv>): { tenant: string; admin: boolean } {
  const caller = callerOf(c);
  return { tenant: caller.tenant, admin: caller.scope === 'admin' };
}

/** The caller's key ('' with no keys configured): what its shared memory regions belong to. */
export function owner(c: Context<AppEnv>): string {
  return callerOf(c).key;
}

export function limit(maxSize: number): MiddlewareHandler {
  return bodyLimit({
    maxSize,
    onError: (c) => errorResponse(c, tooLarge(maxSize)),
  });
}

/** Whether the caller is an admin: no keys configured, or an admin key (after auth() ran). */
export function isAdmin(c: Context<AppEnv>): boolean {
  return callerOf(c).scope === 'admin';
}
