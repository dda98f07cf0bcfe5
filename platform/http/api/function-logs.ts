/**
 * /api/v1/functions/{name}/series and /logs: a function's time series, and its own log — the last
 * entries, or (follow=1) those and every new one, as server-sent events.
 */
import type { Context, Hono, MiddlewareHandler } from 'hono';
import type { SSEStreamingApi } from 'hono/streaming';
import { streamSSE } from 'hono/streaming';

import type { FunctionLogEntry, LogList, Reply, SeriesResult } from '../../../sdk/api/index.js';
import { InvalidInputError } from '../../../sdk/errors.js';
import type { ManagedFunctions } from '../../functions/serving.js';
import { managedFor } from '../../functions/tenant-view.js';
import { parseVersion } from '../../registry/index.js';
import type { AppEnv } from '../middleware.js';
import { callerOf } from '../middleware.js';

const LOG_LEVELS: FunctionLogEntry['level'][] = ['debug', 'info', 'warn', 'error'];

export interface FunctionLogOptions {
  functions: ManagedFunctions;
  /** False while the node drains: a followed log ends. */
  ready: () => boolean;
}

/** What a log request asks for: its query's version, limit, since and level, each checked. */
interface LogQuery {
  version: number | undefined;
  limit: number;
  since: number | undefined;
  level: FunctionLogEntry['level'] | undefined;
}

export function functionLogRoutes(app: Hono<AppEnv>, o: FunctionLogOptions, manage: MiddlewareHandler<AppEnv>): void {
  const { functions } = o;
  // A function the caller does not see is not found (tenant-view.ts).
  const seen = (c: Context<AppEnv>, name: string) => managedFor(callerOf(c), functions).get(name);
  // The function's time series: one sample a second for 15 minutes, per version.
  app.get('/functions/:name/series', manage, async (c) => {
    const name = c.req.param('name');
    await seen(c, name);
    return c.json({
      name,
      versions: functions.series.of(name, parseVersion(c.req.query('version'))),
    } satisfies Reply<SeriesResult>);
  });
  // The function's own log: the last entries, or (follow=1) those and every new one, as server-sent events.
  app.get('/functions/:name/logs', manage, async (c) => {
    const name = c.req.param('name');
    await seen(c, name);
    const query = logQuery(c);
    const entries = functions.logs.recent(name, query);
    if (c.req.query('follow') !== '1') return c.json({ entries } satisfies Reply<LogList>);
    return streamSSE(c, (stream) => followLog(o, stream, name, query, entries));
  });
}

function logQuery(c: Context): LogQuery {
  const version = parseVersion(c.req.query('version'));
  const limitText = c.req.query('limit');
  const count = limitText === undefined ? 200 : Number(limitText);
  if (!Number.isInteger(count) || count < 1 || count > 1000)
    throw new InvalidInputError('limit must be an integer from 1 to 1000');
  const sinceText = c.req.query('since');
  const since = sinceText === undefined ? undefined : Number(sinceText);
  if (since !== undefined && !Number.isFinite(since))
    throw new InvalidInputError('since is a time in milliseconds since the epoch');
  const level = c.req.query('level');
  if (level !== undefined && !LOG_LEVELS.includes(level as FunctionLogEntry['level']))
    throw new InvalidInputError(`level must be one of ${LOG_LEVELS.join(', ')} (the entries at it or above)`);
  return { version, limit: count, since, level: level as FunctionLogEntry['level'] | undefined };
}

/** The entries so far, then every new one, until the client goes or the node drains. */
async function followLog(
  o: FunctionLogOptions,
  stream: SSEStreamingApi,
  name: string,
  query: LogQuery,
  entries: FunctionLogEntry[],
): Promise<void> {
  for (const e of entries) await stream.writeSSE({ event: 'log', data: JSON.stringify(e) });
  const queued: FunctionLogEntry[] = [];
  let wake: (() => void) | undefined;
  const stop = o.functions.logs.follow(
    name,
    query.version,
    (e) => {
      queued.push(e);
      wake?.();
    },
    query.level,
  );
  stream.onAbort(() => wake?.());
  let idle = 0;
  try {
    // Until the client goes, or the node drains (a follow must not hold a drain open).
    while (!stream.aborted && !stream.closed && o.ready()) {
      if (queued.length === 0) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 1000).unref();
        });
        wake = undefined;
        // A comment every 15 s keeps proxies from closing a quiet stream.
        if (queued.length === 0 && ++idle % 15 === 0) await stream.write(': keep-alive\n\n');
      }
      for (const e of queued.splice(0)) await stream.writeSSE({ event: 'log', data: JSON.stringify(e) });
    }
  } finally {
    stop();
  }
}
