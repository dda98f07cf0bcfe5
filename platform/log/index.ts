export type { LogFormat } from './log-switches.js';
export { LogSwitches } from './log-switches.js';
export type { Logger, LogOptions } from './logger.js';
export { createLogger, silentLog } from './logger.js';
