/**
 * A hot route's answer written out on node:http: the reply, or an error as `{"error", "code"}` through
 * the one HTTP mapping (../errors.ts).
 */
import type { ServerResponse } from 'node:http';

import type { ServingFunctions } from '../../functions/serving.js';
import type { Logger } from '../../log/index.js';
import { toHttpResponse } from '../errors.js';
import type { Reply } from './request.js';

export interface ReplyOptions {
  /** Where a failed call's detail goes (the function's own log). */
  service: Pick<ServingFunctions, 'errorDetail'>;
  /** False while the node starts or drains. */
  ready: () => boolean;
  /** Where unexpected errors and the detail of errors go (the `http` component's logger). */
  log?: Logger;
}

export function send(o: ReplyOptions, res: ServerResponse, reply: Reply): void {
  if (res.destroyed) return;
  const headers: Record<string, string> = { ...reply.headers, 'content-length': String(reply.body.byteLength) };
  if (reply.status === 200 && reply.body.byteLength > 0) headers.vary = 'accept-encoding';
  // While draining, no connection is kept alive past its response.
  if (!o.ready()) headers.connection = 'close';
  try {
    res.writeHead(reply.status, headers);
  } catch (error) {
    // A header Node refuses (the hook layer checks content types; this is the last line): the
    // caller gets a 500, the process goes on.
    o.log?.error({ err: error }, 'a response header was refused');
    if (res.headersSent) return void res.destroy();
    const body = Buffer.from(JSON.stringify({ error: 'the response could not be sent', code: 'INTERNAL' }));
    res.writeHead(500, { 'content-type': 'application/json', 'content-length': String(body.byteLength) });
    return void res.end(body);
  }
  res.end(reply.body);
}

export function fail(
  o: ReplyOptions,
  res: ServerResponse,
  error: unknown,
  closeConnection: boolean,
  requestId: string | undefined,
  fn?: string,
): void {
  // The whole message (a model's traceback) goes to the function's own log, for its admins.
  const onDetail = o.service.errorDetail(fn, requestId);
  const { status, body, headers } = toHttpResponse(error, { requestId, log: o.log, onDetail });
  send(o, res, {
    status,
    headers: { ...headers, 'content-type': 'application/json', ...(closeConnection ? { connection: 'close' } : {}) },
    body: Buffer.from(JSON.stringify(body)),
  });
}
