/**
 * Triton's logging extension on the node's logger (../log/log-switches.ts): log_info, log_warning,
 * log_error, log_verbose_level and log_format read and changed while the node runs; log_file is
 * where the node's operator sends its logs (Hearth: standard output, so ''), which the protocol may
 * not change — Triton refuses it in the same words. An update is checked whole before any switch
 * moves; a setting given null is left as it is (as Triton's HTTP does).
 */
import { InvalidInputError, UnsupportedError } from '../../sdk/errors.js';
import type { LogSwitches } from '../log/index.js';
import { clip, MAX_SETTINGS, UINT32_MAX } from './setting-bounds.js';

/** A setting's value as a transport read it: HTTP's JSON value, gRPC's parameter (null: none). */
export type LogValue = boolean | number | string | null;
export type LogUpdate = Map<string, LogValue>;

/** The settings, in Triton's order and with its names. */
export interface LogSettingsAnswer {
  log_file: string;
  log_info: boolean;
  log_warning: boolean;
  log_error: boolean;
  log_verbose_level: number;
  log_format: string;
}

/** Each switch's setting, by its name: a Map, so no inherited property (`__proto__`, `constructor`) names one. */
const SWITCH = new Map<string, 'info' | 'warning' | 'error'>([
  ['log_info', 'info'],
  ['log_warning', 'warning'],
  ['log_error', 'error'],
]);

/** Applies `update` to `switches` (all of it, or none of it on a refusal); returns the settings. */
export function logSettings(switches: LogSwitches, update?: LogUpdate): LogSettingsAnswer {
  if (update && update.size > 0) {
    if (update.size > MAX_SETTINGS) throw new InvalidInputError(`a log update names at most ${MAX_SETTINGS} settings`);
    const changes: (() => void)[] = [];
    for (const [name, value] of update) {
      if (value === null) continue;
      const change = changeOf(switches, name, value);
      changes.push(change);
    }
    for (const change of changes) change();
  }
  return {
    log_file: '',
    log_info: switches.info,
    log_warning: switches.warning,
    log_error: switches.error,
    log_verbose_level: switches.verbose,
    log_format: switches.format,
  };
}

/** One setting's change, checked (not yet made). */
function changeOf(switches: LogSwitches, name: string, value: Exclude<LogValue, null>): () => void {
  if (name === 'log_file') throw new UnsupportedError('log file location can not be updated through network protocol');
  const which = SWITCH.get(name);
  if (which) {
    if (typeof value !== 'boolean') throw new InvalidInputError(`expect boolean for '${name}'`);
    return () => {
      switches[which] = value;
    };
  }
  if (name === 'log_verbose_level') {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > UINT32_MAX)
      throw new InvalidInputError(`expect an integer >= 0 for 'log_verbose_level', got: ${clip(String(value))}`);
    return () => {
      switches.verbose = value;
    };
  }
  if (name === 'log_format') {
    if (typeof value !== 'string') throw new InvalidInputError(`expect string for '${name}'`);
    if (value !== 'default' && value !== 'ISO8601')
      throw new InvalidInputError(`invalid argument for log_format, got: ${clip(value)} (default or ISO8601)`);
    return () => {
      switches.format = value;
    };
  }
  throw new InvalidInputError(
    `unknown log setting '${clip(name)}': the settings are log_info, log_warning, log_error, log_verbose_level and log_format`,
  );
}
