/**
 * The management API's contract for jobs (POST /fn/{name}?async, GET /api/v1/jobs) and function
 * logs, as zod schemas (./schemas.ts holds the rest, and says how they are used).
 */
import { z } from 'zod';

export const JobInfoSchema = z.looseObject({
  id: z.string(),
  function: z.string(),
  version: z.number().optional(),
  status: z.enum(['queued', 'running', 'succeeded', 'failed']),
  createdAt: z.string().optional(),
  startedAt: z.string().optional(),
  finishedAt: z.string().optional(),
  attempts: z.number(),
  node: z.string().optional(),
  result: z
    .looseObject({
      contentType: z.string(),
      version: z.number(),
      json: z.unknown().optional(),
      base64: z.string().optional(),
    })
    .optional(),
  error: z.looseObject({ error: z.string(), code: z.string() }).optional(),
  /** Where the outcome is posted (scheme, host and path), and each delivery try, oldest first. */
  webhook: z.string().optional(),
  deliveries: z
    .array(
      z.looseObject({ at: z.string(), ok: z.boolean(), status: z.number().optional(), error: z.string().optional() }),
    )
    .optional(),
});
export type JobInfo = z.infer<typeof JobInfoSchema>;

/** GET /api/v1/jobs: the caller's jobs newest first, without results; `next` continues the listing. */
export const JobListSchema = z.looseObject({ jobs: z.array(JobInfoSchema), next: z.string().optional() });
export type JobList = z.infer<typeof JobListSchema>;

export const JobAcceptedSchema = z.looseObject({ id: z.string(), status: z.string(), statusUrl: z.string() });
export type JobAccepted = z.infer<typeof JobAcceptedSchema>;

/** An entry of a function's own log (GET /api/v1/functions/{name}/logs). */
export const LogEntrySchema = z.looseObject({
  /** Date.now() milliseconds. */
  at: z.number(),
  function: z.string(),
  /** Absent when the entry is not one version's (an error before a version was chosen). */
  version: z.number().optional(),
  source: z.enum(['hook', 'runner', 'lifecycle', 'error']),
  level: z.enum(['debug', 'info', 'warn', 'error']),
  msg: z.string(),
  requestId: z.string().optional(),
});
export type FunctionLogEntry = z.infer<typeof LogEntrySchema>;
export const LogListSchema = z.looseObject({ entries: z.array(LogEntrySchema) });
export type LogList = z.infer<typeof LogListSchema>;
