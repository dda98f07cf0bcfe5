/** A Hearth node configured from the environment (./main.ts starts it); SIGTERM or SIGINT drains it. */
import { loadConfig } from '../config/index.js';
import { createLogger } from '../log/index.js';
import { startNode } from '../node/index.js';

/** A bad setting or a failed start: one line naming it, and exit 1 (no stack trace). */
const fatal = (error: unknown): never => {
  console.error(JSON.stringify({ level: 'fatal', msg: (error as Error).message }));
  process.exit(1);
};
const config = (() => {
  try {
    return loadConfig();
  } catch (error) {
    return fatal(error);
  }
})();
// A promise nobody awaited that failed is a bug to log, not a reason to drop every request in flight.
const log = createLogger({ level: config.logLevel }).child({ component: 'process' });
process.on('unhandledRejection', (reason) => {
  log.error({ err: reason }, 'a promise failed with nobody waiting on it (a bug; the node goes on)');
});
const node = await startNode(config).catch(fatal);
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    void node.drain().then(() => {
      // Sockets finish writing and handles close; then the process ends on its own. A handle that
      // lingers past a few seconds does not keep it alive.
      process.exitCode = 0;
      setTimeout(() => process.exit(0), 5000).unref();
    });
  });
}
