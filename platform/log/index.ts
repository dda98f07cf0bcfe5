export type { Logger, LogOptions } from './logger.js';
export { createLogger, silentLog } from './logger.js';
