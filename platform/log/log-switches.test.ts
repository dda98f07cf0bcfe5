import { pino } from 'pino';
import { describe, expect, it } from 'vitest';

import { LogSwitches } from './log-switches.js';
import { createLogger } from './logger.js';

const NAMES = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
const LINES = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;

describe('HEARTH_LOG_LEVEL through the switches', () => {
  // The reference: pino at that level, as the node logged before the switches.
  it.each(NAMES)('%s writes the lines pino at that level writes', (name) => {
    const reference = pino({ level: name });
    const switches = new LogSwitches(name);
    for (const line of LINES)
      expect([line, switches.allows(reference.levels.values[line]!)]).toEqual([line, reference.isLevelEnabled(line)]);
  });

  it('writes fatal lines with error lines switched off, except on a silent node until log_error turns them on', () => {
    const fatal = pino.levels.values.fatal!;
    const switches = new LogSwitches('info');
    switches.error = false;
    expect(switches.allows(fatal)).toBe(true);
    const silent = new LogSwitches('silent');
    expect(silent.allows(fatal)).toBe(false);
    silent.error = true;
    expect(silent.allows(fatal)).toBe(true);
  });

  it("the logger's and its children's isLevelEnabled follow the switches as they change", () => {
    const switches = new LogSwitches('info');
    const log = createLogger({ level: 'info', pretty: false, switches });
    const child = log.child({ component: 'http' });
    expect([log.isLevelEnabled('debug'), child.isLevelEnabled('debug'), child.isLevelEnabled('info')]).toEqual([
      false,
      false,
      true,
    ]);
    switches.verbose = 1;
    switches.info = false;
    expect([log.isLevelEnabled('debug'), child.isLevelEnabled('debug'), child.isLevelEnabled('info')]).toEqual([
      true,
      true,
      false,
    ]);
    expect(child.isLevelEnabled('fatal')).toBe(true);
  });
});
