export type { AppOptions } from './app.js';
export { createApp, InFlight } from './app.js';
export { toHttpResponse } from './errors.js';
export { browserRefusal, frontDoor } from './front-door.js';
export type { HotRouteOptions } from './hot/index.js';
export { createHotRoutes } from './hot/index.js';
