/**
 * Triton's trace and logging extensions over HTTP: `GET|POST /v2/trace/setting`,
 * `GET|POST /v2/models/{name}/trace/setting` and `GET|POST /v2/logging`, each a codec over the
 * protocol's core (../kserve: Kserve.traceSetting, Kserve.logSettings). A deploy key's (as the
 * repository extension); the core decides what only an admin may change (the node's settings) and
 * which models a caller may name (its tenant's).
 */
import type { Context } from 'hono';
import { Hono } from 'hono';

import { InvalidInputError } from '../../sdk/errors.js';
import type { ApiKey } from '../config/index.js';
import type { Kserve, LogUpdate, LogValue, TraceUpdate } from '../kserve/index.js';
import { clip, parseJson } from '../kserve/index.js';
import { refuseFormBody } from './json-body.js';
import type { AppEnv } from './middleware.js';
import { auth, callerOf, limit } from './middleware.js';

export interface SettingsRouteOptions {
  kserve: Kserve;
  apiKeys: ApiKey[];
  loopbackGuard?: boolean;
}

/** A settings update is a few short values. */
const MAX_SETTINGS_BODY = 64 * 2 ** 10;

/** An update's JSON object (an empty body: no change). */
async function body(c: Context<AppEnv>, what: string, loopbackGuard: boolean): Promise<Record<string, unknown>> {
  refuseFormBody(loopbackGuard, (h) => c.req.header(h));
  const text = await c.req.text();
  const value = text.trim() === '' ? {} : parseJson(text, what);
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new InvalidInputError(`${what} must be a JSON object of settings`);
  return value as Record<string, unknown>;
}

/** A trace update as Triton's HTTP sends it: each setting a string, a list of strings, or null to clear it. */
function traceUpdate(json: Record<string, unknown>): TraceUpdate {
  const update: TraceUpdate = new Map();
  for (const [name, value] of Object.entries(json)) {
    if (value === null) update.set(name, null);
    else if (typeof value === 'string') update.set(name, [value]);
    else if (Array.isArray(value) && value.length <= 64 && value.every((v) => typeof v === 'string'))
      update.set(name, value as string[]);
    else
      throw new InvalidInputError(
        `trace setting '${clip(name)}' must be a string, a list of strings or null (as "trace_rate": "100")`,
      );
  }
  return update;
}

/** A log update as Triton's HTTP sends it: booleans, a number, a string; null leaves a setting as it is. */
function logUpdate(json: Record<string, unknown>): LogUpdate {
  const update: LogUpdate = new Map();
  for (const [name, value] of Object.entries(json)) {
    if (value !== null && !['boolean', 'number', 'string'].includes(typeof value))
      throw new InvalidInputError(`log setting '${clip(name)}' must be a boolean, a number or a string`);
    update.set(name, value as LogValue);
  }
  return update;
}

export function settingsRoutes(o: SettingsRouteOptions): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const manage = auth(o.apiKeys, 'deploy');
  const guard = o.loopbackGuard === true;
  const as = (c: Context<AppEnv>) => o.kserve.as(callerOf(c));
  // Triton's shape: each setting a string, trace_level a list.
  const traceJson = (answer: [string, string[]][]) =>
    Object.fromEntries(answer.map(([name, values]) => [name, name === 'trace_level' ? values : values[0]]));

  const readTrace = async (c: Context<AppEnv>) => c.json(traceJson(await as(c).traceSetting(c.req.param('name'))));
  const writeTrace = async (c: Context<AppEnv>) => {
    const update = traceUpdate(await body(c, 'the trace setting request', guard));
    return c.json(traceJson(await as(c).traceSetting(c.req.param('name'), update)));
  };
  app.get('/v2/trace/setting', manage, readTrace);
  app.post('/v2/trace/setting', manage, limit(MAX_SETTINGS_BODY), writeTrace);
  app.get('/v2/models/:name/trace/setting', manage, readTrace);
  app.post('/v2/models/:name/trace/setting', manage, limit(MAX_SETTINGS_BODY), writeTrace);

  app.get('/v2/logging', manage, (c) => c.json(as(c).logSettings()));
  app.post('/v2/logging', manage, limit(MAX_SETTINGS_BODY), async (c) =>
    c.json(as(c).logSettings(logUpdate(await body(c, 'the log setting request', guard)))),
  );
  return app;
}
