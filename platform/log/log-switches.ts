/**
 * The node logger's switches, which Triton's logging extension reads and sets while the node runs:
 * info, warning and error lines each on or off, a verbose level (1: debug lines, 2 and more: trace
 * lines too) and the time format (`default`: epoch milliseconds, pino's; `ISO8601`: ISO 8601 text).
 *
 * The logger and every child of it pass each line through `allows` (a pino logMethod hook), so a
 * switch takes effect at once in every component, children made before it changed included.
 */

/** pino's level numbers. */
const DEBUG = 20;
const INFO = 30;
const WARN = 40;
const ERROR = 50;
const FATAL = 60;
/** HEARTH_LOG_LEVEL's names (pino's), each a threshold. */
const LEVELS: Record<string, number> = {
  trace: 10,
  debug: DEBUG,
  info: INFO,
  warn: WARN,
  error: ERROR,
  fatal: FATAL,
  silent: Infinity,
};

export type LogFormat = 'default' | 'ISO8601';

export class LogSwitches {
  info: boolean;
  warning: boolean;
  error: boolean;
  verbose: number;
  format: LogFormat = 'default';
  /**
   * Fatal lines: always written (as pino writes them at every level but silent), unless the node
   * was started silent — then only once log_error turns error lines on.
   */
  readonly fatal: boolean;

  /** The switches of a pino level name (HEARTH_LOG_LEVEL): that level and those above it on. */
  constructor(level = 'info') {
    const threshold = Object.hasOwn(LEVELS, level) ? LEVELS[level]! : INFO;
    this.fatal = threshold <= FATAL;
    this.info = threshold <= INFO;
    this.warning = threshold <= WARN;
    this.error = threshold <= ERROR;
    this.verbose = threshold <= 10 ? 2 : threshold <= DEBUG ? 1 : 0;
  }

  /** Whether a line of pino level `level` is written now. */
  allows(level: number): boolean {
    if (level >= FATAL) return this.fatal || this.error;
    if (level >= ERROR) return this.error;
    if (level >= WARN) return this.warning;
    if (level >= INFO) return this.info;
    if (level >= DEBUG) return this.verbose >= 1;
    return this.verbose >= 2;
  }

  /** pino's `"time"` field, in the format set now. */
  time(): string {
    return this.format === 'ISO8601' ? `,"time":"${new Date().toISOString()}"` : `,"time":${Date.now()}`;
  }
}
