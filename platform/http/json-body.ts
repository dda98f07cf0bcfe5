/**
 * A management route's JSON body, checked against the SDK's schema by @hono/zod-validator; the
 * handler reads it, typed, with `c.req.valid('json')`. A body that is not JSON, or not of the
 * schema, is InvalidInputError naming the first problem, as the rest of the API answers.
 */
import { zValidator } from '@hono/zod-validator';
import type { z } from 'zod';

import { invalidBody } from '../../sdk/api/index.js';
import { InvalidInputError } from '../../sdk/errors.js';

const JSON_TYPE = /^application\/([\w.-]+\+)?json\s*(;|$)/i;

export function jsonBody<S extends z.ZodType>(schema: S) {
  return zValidator('json', schema, (result, c) => {
    // hono reads a body as JSON only when it is labelled so; anything else would be checked as {}.
    if (!JSON_TYPE.test(c.req.header('content-type') ?? ''))
      throw new InvalidInputError('send the body as JSON, with Content-Type: application/json');
    if (!result.success) throw invalidBody(result.error);
  });
}

/** The content types a web page may send another site without a preflight. */
const SIMPLE_FORM = /^\s*(text\/plain|application\/x-www-form-urlencoded|multipart\/form-data)\s*(;|$)/i;

/**
 * The KServe routes read a body as JSON whatever its label: Triton's clients send none, and
 * `curl -d @body.json` labels it a form. A node with no API key (`guard`) refuses the three labels a
 * web page can send to another site without a preflight, but only from a browser — a request that
 * carries `Origin` or `Sec-Fetch-Site`, as every browser's cross-site POST does — so that no form or
 * `text/plain` fetch is ever read as a request there. (The front door has already refused a foreign
 * `Origin`; this covers a browser that sends only `Sec-Fetch-Site`, or the node's own pages.)
 */
export function refuseFormBody(guard: boolean, header: (name: string) => string | undefined): void {
  if (!guard || (header('origin') === undefined && header('sec-fetch-site') === undefined)) return;
  const contentType = header('content-type');
  if (contentType !== undefined && SIMPLE_FORM.test(contentType))
    throw new InvalidInputError(
      `a ${contentType.split(';')[0]!.trim()} body is not read as JSON: send Content-Type: application/json (or none)`,
    );
}
