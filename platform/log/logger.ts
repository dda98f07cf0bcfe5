/**
 * The node's logger: pino, JSON lines (one per event) for log collectors, or pino-pretty's coloured
 * lines when stdout is a terminal. Each component logs through a child with a `component` field
 * (`http`, `grpc`, `jobs`, `runner`, `cluster`, `registry`, `artifacts`, `functions`), and a request's
 * lines carry its `requestId`.
 */

import type { Logger } from 'pino';
import { pino } from 'pino';

export type { Logger };

export interface LogOptions {
  level: string;
  /** pino-pretty's readable lines; default: when stdout is a terminal. */
  pretty?: boolean;
}

export function createLogger(options: LogOptions): Logger {
  const pretty = options.pretty ?? process.stdout.isTTY === true;
  return pino({
    level: options.level,
    base: { service: 'hearth' },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } } : {}),
  });
}

/** A logger that drops everything (tests and embedded use that pass none). */
export const silentLog: Logger = pino({ level: 'silent' });
