/**
 * The hot routes (./hot-routes.ts): function URLs and KServe infer on node:http, ahead of the hono
 * app; and the 413 both routers answer for a body over the limit.
 */

export type { HotRouteOptions } from './hot-routes.js';
export { createHotRoutes } from './hot-routes.js';
export { tooLarge } from './read-body.js';
