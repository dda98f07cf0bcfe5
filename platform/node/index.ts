/**
 * A Hearth node: startNode composes one from its configuration (./start-node.ts) — stores
 * (./stores.ts), services (./services.ts), the front and its servers (./front.ts, ./servers.ts),
 * background sweeps (./sweeps.ts), the wait before ready (./warm-up.ts), drain and close
 * (./lifecycle.ts).
 */

export type { HearthNode } from './start-node.js';
export { startNode, VERSION } from './start-node.js';
