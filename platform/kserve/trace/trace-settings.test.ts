/**
 * Trace settings as Triton's own test of its trace extension checks them
 * (qa/L0_trace/trace_endpoint_test.py: test_http_clear_settings, test_http_update_settings), with
 * the node's defaults as the global settings' fallback, and Triton's sampling (every rate-th
 * request while trace_count lasts).
 */
import { describe, expect, it } from 'vitest';

import type { TraceUpdate } from './trace-settings.js';
import { TRACE_DEFAULTS, TraceSettings } from './trace-settings.js';

const u = (o: Record<string, string | string[] | null>): TraceUpdate =>
  new Map(Object.entries(o).map(([k, v]) => [k, typeof v === 'string' ? [v] : v]));
const shown = (s: TraceSettings, model?: string) =>
  Object.fromEntries(
    s
      .of(model)
      .answer()
      .map(([k, v]) => [k, k === 'trace_level' ? v : v[0]]),
  );

/** Triton's test starts from these (its server was started with them). */
const START = { timestamps: true, rate: 1, count: -1, logFrequency: 0 };

describe('trace settings', () => {
  it('clears global fields to the defaults and model fields to the global values, as Triton', () => {
    const s = new TraceSettings(START, 'global_unittest.log');
    s.update('simple', u({ trace_rate: '12', log_frequency: '34' }));
    s.update(undefined, u({ trace_rate: '56', trace_count: '78', trace_level: ['OFF'] }));
    const global = { trace_file: 'global_unittest.log', trace_mode: 'triton' };
    expect(shown(s)).toEqual({
      ...global,
      trace_level: ['OFF'],
      trace_rate: '56',
      trace_count: '78',
      log_frequency: '0',
    });
    expect(shown(s, 'simple')).toEqual({
      ...global,
      trace_level: ['OFF'],
      trace_rate: '12',
      trace_count: '78',
      log_frequency: '34',
    });

    s.update(undefined, u({ trace_rate: null, trace_count: null }));
    expect(shown(s)).toEqual({
      ...global,
      trace_level: ['OFF'],
      trace_rate: '1',
      trace_count: '-1',
      log_frequency: '0',
    });
    expect(shown(s, 'simple')).toEqual({
      ...global,
      trace_level: ['OFF'],
      trace_rate: '12',
      trace_count: '-1',
      log_frequency: '34',
    });
    s.update('simple', u({ trace_rate: null, trace_level: null }));
    expect(shown(s, 'simple')).toEqual({
      ...global,
      trace_level: ['OFF'],
      trace_rate: '1',
      trace_count: '-1',
      log_frequency: '34',
    });
    // A model with nothing of its own is the global setting again.
    s.update('simple', u({ log_frequency: null }));
    expect(s.of('simple')).toBe(s.of());
  });

  it('refuses what Triton refuses, in its words, and changes nothing on a refusal', () => {
    const s = new TraceSettings(START, 'trace.json');
    const before = shown(s);
    const refusals: [Record<string, string | string[] | null>, RegExp][] = [
      [{ trace_file: 'model.log' }, /^trace file location can not be updated through network protocol$/],
      [{ trace_level: ['OFF', 'TIMESTAMPS'] }, /^Expect only one trace level 'OFF' is specified$/],
      [{ trace_level: ['TENSORS'] }, /^trace level TENSORS is not supported/],
      [{ trace_level: ['LOUD'] }, /^unknown trace level 'LOUD'/],
      [{ trace_rate: 'ten' }, /^Unable to parse 'trace_rate', got: ten/],
      [{ trace_rate: '4294967296' }, /^Unable to parse 'trace_rate', value is out of range \[ 0, 4294967295 \]/],
      [{ trace_rate: ['1', '2'] }, /^expect only 1 value for 'trace_rate'$/],
      [{ trace_count: '-2' }, /^Unable to parse 'trace_count'. Expecting value >= -1, got: -2$/],
      [{ trace_count: '1.5' }, /^Unable to parse 'trace_count', got: 1.5/],
      [{ trace_rate: '5', trace_sample: '1' }, /^unknown trace setting 'trace_sample'/],
      [{ trace_mode: 'opentelemetry' }, /^trace_mode can not be updated/],
    ];
    for (const [update, words] of refusals) expect(() => s.update(undefined, u(update)), words.source).toThrow(words);
    expect(shown(s)).toEqual(before);
    const none = new TraceSettings(TRACE_DEFAULTS, '');
    expect(() => none.update(undefined, u({ trace_level: ['TIMESTAMPS'] }))).toThrow(
      'Attempting to set invalid trace setting :trace file name is not given',
    );
  });

  it('samples every rate-th request while trace_count lasts, and shows the count left', () => {
    const s = new TraceSettings(TRACE_DEFAULTS, 'trace.json');
    expect(s.of('m').take()).toBe(false);
    s.update('m', u({ trace_level: ['TIMESTAMPS'], trace_rate: '3', trace_count: '2' }));
    const taken = Array.from({ length: 12 }, () => s.of('m').take());
    expect(taken.map((t, i) => (t ? i + 1 : 0)).filter(Boolean)).toEqual([3, 6]);
    expect(shown(s, 'm').trace_count).toBe('0');
    // Another model follows the global setting, which is off.
    expect(s.of('other').take()).toBe(false);
  });
});
