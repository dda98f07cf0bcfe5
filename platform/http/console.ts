/**
 * The console at /console: the single page built into console/dist (`npm run build:console`, which
 * the install runs), served as static files with a strict content security policy. The page holds
 * nothing secret; every call it makes goes through the API with the key the user signs in with.
 */
import { readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import type { Hono } from 'hono';

const DIST = fileURLToPath(new URL('../../console/dist/', import.meta.url));
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};
const HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

// biome-ignore lint/suspicious/noExplicitAny: any app's environment
export function serveConsole(app: Hono<any>, dist = DIST): void {
  const files = new Map<string, Promise<Buffer | undefined>>();
  const file = (name: string) => {
    let f = files.get(name);
    if (!f) {
      f = readFile(join(dist, name)).catch(() => undefined);
      files.set(name, f);
    }
    return f;
  };
  app.get('/console', (c) => c.redirect('/console/', 308));
  app.get('/console/:file{[A-Za-z0-9._-]*}', async (c) => {
    const name = c.req.param('file') || 'index.html';
    const type = TYPES[extname(name)];
    const body = type ? await file(name) : undefined;
    if (!body) {
      if (!(await file('index.html')))
        return c.text('the console is not built: run `npm run build:console` (infra/bootstrap.sh does)', 503);
      return c.text('not found', 404);
    }
    return c.body(new Uint8Array(body), 200, { 'content-type': type!, ...HEADERS });
  });
}
