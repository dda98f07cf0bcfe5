/**
 * What every HTTP request meets before any route: the browser guard of a node that takes no API
 * key, and the request id.
 *
 * Browser guard (`Config.loopbackGuard`: no key configured, loopback bind — the default). A web page
 * open in the developer's browser can reach 127.0.0.1, so without a key it could deploy and invoke
 * functions. As Jupyter and Docker Desktop do, the node refuses:
 * - DNS rebinding: a page on evil.example whose name is made to resolve to 127.0.0.1 arrives with
 *   `Host: evil.example`. Only loopback names (`localhost`, `*.localhost`) and addresses are served.
 * - Cross-site requests: a page elsewhere may send simple requests (text/plain, forms) with no
 *   preflight. A request whose `Sec-Fetch-Site` is `cross-site` or `same-site`, or whose `Origin`
 *   is not the node's own (`null` included), is refused.
 * Clients that are not browsers (curl, the SDK, tritonclient) send neither header and pass.
 *
 * Request id: `x-request-id` as the caller sent it (1–128 of `A–Z a–z 0–9 . _ : -`), or a new one;
 * answered in the same header, in error bodies, and carried into logs and job records.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';

import { PermissionDeniedError } from '../../sdk/errors.js';
import { requestIdOf } from '../caller/index.js';

const LOOPBACK_HOST = /^(localhost|([a-z0-9-]+\.)+localhost|127(\.\d{1,3}){3}|\[::1\])(:\d{1,5})?$/i;

/** The host and port a Host header or an origin names, as URL normalises them; undefined if neither parses. */
function hostOf(value: string, scheme = 'http:'): string | undefined {
  try {
    return new URL(value.includes('://') ? value : `${scheme}//${value}`).host;
  } catch {
    return undefined;
  }
}

/** Why a browser's request is refused, or undefined when it may pass. */
export function browserRefusal(headers: IncomingHttpHeaders): string | undefined {
  const { host, origin } = headers;
  if (host !== undefined && !LOOPBACK_HOST.test(host))
    return `Host "${host.slice(0, 100)}" is not a loopback name: a node with no API key serves only localhost (set HEARTH_API_KEYS to serve other names)`;
  const site = headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site')
    return 'a request from another site is refused by a node with no API key (set HEARTH_API_KEYS to take them)';
  if (origin !== undefined) {
    const from = origin === 'null' ? undefined : hostOf(origin);
    const scheme = origin.startsWith('https:') ? 'https:' : 'http:';
    if (from === undefined || host === undefined || from !== hostOf(host, scheme))
      return `a request from origin "${origin.slice(0, 100)}" is refused by a node with no API key (only the node's own pages may call it)`;
  }
  return undefined;
}

export interface FrontDoor {
  /**
   * Gives the request its id (set on the request's headers, so every route reads the same one, and
   * on the response) and applies the browser guard. Returns the refusal to send, if any.
   */
  admit(req: IncomingMessage, res: ServerResponse): PermissionDeniedError | undefined;
}

export function frontDoor(options: { loopbackGuard: boolean }): FrontDoor {
  return {
    admit(req, res) {
      const id = requestIdOf(req.headers);
      req.headers['x-request-id'] = id;
      res.setHeader('x-request-id', id);
      const refusal = options.loopbackGuard ? browserRefusal(req.headers) : undefined;
      return refusal === undefined ? undefined : new PermissionDeniedError(refusal);
    },
  };
}
