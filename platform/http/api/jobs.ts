/**
 * /api/v1/jobs: async invocations' records. A job is its submitter's: another invoke key is told
 * it does not exist; an admin key reads all.
 */

import type { Context } from 'hono';
import { Hono } from 'hono';

import type { JobInfo, JobList, Reply } from '../../../sdk/api/index.js';
import { JobNotFoundError } from '../../../sdk/errors.js';
import type { ApiKey } from '../../config/index.js';
import type { JobQueue } from '../../jobs/index.js';
import { encodeCursor, jobQuery, jobView } from '../../jobs/index.js';
import { httpStatus } from '../errors.js';
import type { AppEnv } from '../middleware.js';
import { auth, callerOf, isAdmin } from '../middleware.js';

export function jobRoutes(o: { jobs: JobQueue; apiKeys: ApiKey[] }): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const invoke = auth(o.apiKeys, 'invoke');
  const job = async (c: Context<AppEnv>) => {
    const id = c.req.param('id')!;
    const record = await o.jobs.get(id);
    if (!record || (!isAdmin(c) && (record.owner ?? '') !== callerOf(c).id))
      throw new JobNotFoundError(`no job ${id} (unknown, or its record expired)`);
    return record;
  };
  // The caller's jobs (an admin key's: everyone's), newest first, without their results.
  app.get('/jobs', invoke, async (c) => {
    const page = await o.jobs.list(jobQuery(c.req.query(), isAdmin(c) ? undefined : callerOf(c).id));
    return c.json({
      jobs: page.records.map((r) => jobView(r, { result: false })),
      ...(page.next ? { next: encodeCursor(page.next) } : {}),
    } satisfies Reply<JobList>);
  });
  app.get('/jobs/:id', invoke, async (c) => c.json(jobView(await job(c)) satisfies Reply<JobInfo>));
  // The result's own bytes and content type, as the synchronous call would have answered.
  app.get('/jobs/:id/result', invoke, async (c) => {
    const record = await job(c);
    if (record.status === 'failed') return c.json(record.error, httpStatus(record.error?.code ?? 'INTERNAL') as 400);
    if (!record.result) return c.json(jobView(record) satisfies Reply<JobInfo>, 202);
    return new Response(record.result.body.slice(), {
      status: 200,
      headers: { 'content-type': record.result.contentType, 'hearth-version': String(record.result.version) },
    });
  });
  return app;
}
