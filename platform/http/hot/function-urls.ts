/**
 * Function URLs (`POST /fn/{name}[/versions/{v}]`): a call answered now — once per Idempotency-Key
 * when it carries one — or, with `Prefer: respond-async`, submitted as a job and answered 202.
 */
import { InvalidInputError } from '../../../sdk/errors.js';
import type { ServingFunctions } from '../../functions/serving.js';
import { servingFor } from '../../functions/tenant-view.js';
import type { JobQueue } from '../../jobs/index.js';
import { requestHash } from '../../jobs/index.js';
import { IdempotencyCache } from './idempotency.js';
import type { Call, Handler, Reply } from './request.js';
import { deadlineOf } from './request.js';

export interface FunctionUrlOptions {
  service: ServingFunctions;
  jobs: JobQueue;
}

/**
 * Whether a function URL call is submitted as a job (`Prefer: respond-async` or `?async=1`): its
 * body is then kept past the reply, as the job's input. A call answered now is done with its body
 * once answered.
 */
export function submitsJob(header: (name: string) => string | undefined, query: URLSearchParams): boolean {
  return /\brespond-async\b/i.test(header('prefer') ?? '') || query.get('async') === '1';
}

/** The function URLs' handler, with its own idempotency cache. */
export function functionUrls(o: FunctionUrlOptions): Handler {
  const idempotency = new IdempotencyCache();
  return async (call) => {
    const contentType = call.header('content-type') ?? 'application/octet-stream';
    if (submitsJob(call.header, call.query)) return submitJob(o, call, contentType);
    const run = () =>
      servingFor(call.caller, o.service).invoke(
        call.name,
        call.version,
        { body: call.body, contentType },
        { deadline: deadlineOf(call.header), signal: call.signal },
      );
    const key = call.header('idempotency-key');
    if (key !== undefined && (key.length === 0 || key.length > 256))
      throw new InvalidInputError('Idempotency-Key must be 1 to 256 characters');
    const { value, replayed } =
      key === undefined
        ? { value: run(), replayed: false }
        : idempotency.run(
            `${call.caller.id}\0${call.name}/${call.version ?? ''}/${key}`,
            requestHash(contentType, call.body),
            run,
          );
    const result = await value;
    const headers: Record<string, string> = {
      'content-type': result.contentType,
      'hearth-version': String(result.version),
    };
    if (replayed) headers['idempotent-replayed'] = 'true';
    return { status: 200, headers, body: result.body };
  };
}

/** `Prefer: respond-async`: 202 with the job's id and where to ask for it. */
async function submitJob(o: FunctionUrlOptions, call: Call, contentType: string): Promise<Reply> {
  await servingFor(call.caller, o.service).resolve(call.name, call.version);
  const webhook = call.header('hearth-webhook-url') ?? call.query.get('webhook') ?? undefined;
  const key = call.header('idempotency-key');
  const { record, existing } = await o.jobs.submit({
    function: call.name,
    version: call.version,
    body: call.body,
    contentType,
    webhook,
    idempotencyKey: key,
    owner: call.caller.id,
    requestId: call.header('x-request-id'),
  });
  const statusUrl = `/api/v1/jobs/${record.id}`;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    location: statusUrl,
    'preference-applied': 'respond-async',
  };
  if (existing) headers['idempotent-replayed'] = 'true';
  return {
    status: 202,
    headers,
    body: Buffer.from(JSON.stringify({ id: record.id, status: record.status, statusUrl })),
  };
}
