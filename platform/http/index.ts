export { createApp, InFlight } from './app.js';
export type { AppOptions } from './app.js';
export { createHotRoutes } from './hot/index.js';
export type { HotRouteOptions } from './hot/index.js';
export { frontDoor, browserRefusal } from './front-door.js';
export { toHttpResponse } from './errors.js';
