/**
 * The node's logger: pino, JSON lines (one per event) for log collectors, or pino-pretty's coloured
 * lines when stdout is a terminal. Each component logs through a child with a `component` field
 * (`http`, `grpc`, `jobs`, `runner`, `cluster`, `registry`, `artifacts`, `functions`), and a request's
 * lines carry its `requestId`. Which lines are written is its switches' (./log-switches.ts), which
 * Triton's logging extension changes while the node runs.
 */

import type { Logger } from 'pino';
import { pino } from 'pino';

import { LogSwitches } from './log-switches.js';

export type { Logger };

export interface LogOptions {
  level: string;
  /** pino-pretty's readable lines; default: when stdout is a terminal. */
  pretty?: boolean;
  /** The switches it obeys (made from `level` when not given). */
  switches?: LogSwitches;
}

export function createLogger(options: LogOptions): Logger {
  const pretty = options.pretty ?? process.stdout.isTTY === true;
  const switches = options.switches ?? new LogSwitches(options.level);
  const logger = pino({
    // Every level reaches the hook, which asks the switches: a child's level is fixed when it is made.
    level: options.level === 'silent' && !options.switches ? 'silent' : 'trace',
    base: { service: 'hearth' },
    timestamp: () => switches.time(),
    hooks: {
      logMethod(args, method, level) {
        if (switches.allows(level)) method.apply(this, args);
      },
    },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } } : {}),
  });
  // pino's own answer reads the level, 'trace' here: the switches say what is written (children
  // inherit this from the logger they are made of).
  if (logger.level !== 'silent')
    logger.isLevelEnabled = (level) => switches.allows(logger.levels.values[level] ?? Number.POSITIVE_INFINITY);
  return logger;
}

/** A logger that drops everything (tests and embedded use that pass none). */
export const silentLog: Logger = pino({ level: 'silent' });
