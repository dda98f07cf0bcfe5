import { describe, expect, it } from 'vitest';

import { MAX_STEPS, parseSweep } from './sweep.js';
import { BenchUsageError } from './usage-error.js';

const whole = { min: 1, max: 4096 };

describe('parseSweep', () => {
  it('reads a list in the order given, without repeats', () => {
    expect(parseSweep('1,8,32', 'c', whole)).toEqual([1, 8, 32]);
    expect(parseSweep(' 8, 1 ,8', 'c', whole)).toEqual([8, 1]);
  });

  it('reads a doubling sweep to its end inclusive, and a factor that does not land on it', () => {
    expect(parseSweep('1:64:x2', 'c', whole)).toEqual([1, 2, 4, 8, 16, 32, 64]);
    expect(parseSweep('1:100:x3', 'c', whole)).toEqual([1, 3, 9, 27, 81]);
    expect(parseSweep('2:16:*2', 'c', whole)).toEqual([2, 4, 8, 16]);
  });

  it('reads an arithmetic sweep, and mixes sweeps with a list', () => {
    expect(parseSweep('1:32:+8', 'c', whole)).toEqual([1, 9, 17, 25]);
    expect(parseSweep('8:32:+8', 'c', whole)).toEqual([8, 16, 24, 32]);
    expect(parseSweep('1,4:16:x2,100', 'c', whole)).toEqual([1, 4, 8, 16, 100]);
  });

  it('reads fractional rates where whole numbers are not asked for', () => {
    expect(parseSweep('0.5,2.5', 'rate', { min: 0.001, max: 1e6, whole: false })).toEqual([0.5, 2.5]);
    expect(parseSweep('100:400:+100', 'rate', { min: 0.001, max: 1e6, whole: false })).toEqual([100, 200, 300, 400]);
    expect(parseSweep('0.1:0.3:+0.1', 'rate', { min: 0.001, max: 1e6, whole: false })).toEqual([0.1, 0.2, 0.3]);
  });

  it.each([
    ['', 'give a list'],
    ['0', 'from 1 to 4096'],
    ['1.5', 'whole number'],
    ['-1', 'whole number'],
    ['abc', 'whole number'],
    ['1e3', 'whole number'],
    ['9999', 'from 1 to 4096'],
    ['64:1:x2', 'ends below its start'],
    ['1:64:x1', 'must grow'],
    ['1:64:+0', 'must grow'],
    ['1:64', 'is not a sweep'],
    ['1:64:2', 'is not a sweep'],
  ])('refuses %j, naming the option', (text, message) => {
    expect(() => parseSweep(text, '--concurrency', whole)).toThrow(BenchUsageError);
    expect(() => parseSweep(text, '--concurrency', whole)).toThrow(message);
    expect(() => parseSweep(text, '--concurrency', whole)).toThrow('--concurrency');
  });

  it(`refuses a sweep of more than ${MAX_STEPS} steps before making them all`, () => {
    expect(() => parseSweep('1:4096:+1', 'c', whole)).toThrow(`more than ${MAX_STEPS} steps`);
  });

  it.each([
    '1:2:+0.00000001',
    '1:2:+0.0000000001',
    '1:2:x1.0000000001',
  ])('refuses a tiny rate step %j at once, as a usage error, not by looping through it', (text) => {
    const rate = { min: 0.001, max: 1e6, whole: false };
    // The count is known before any step is made: this returns in microseconds, not minutes.
    expect(() => parseSweep(text, '--rate', rate)).toThrow(BenchUsageError);
    expect(() => parseSweep(text, '--rate', rate)).toThrow(`more than ${MAX_STEPS} steps`);
  });

  it.each([
    ['1:2:+0.00000001', 'a concurrency is a whole number'],
    ['1:8:+0.5', 'a concurrency is a whole number'],
    ['1:2:x1.0000000001', `more than ${MAX_STEPS} steps`],
  ])('refuses %j for a concurrency, stepping by a fraction or past MAX_STEPS', (text, message) => {
    expect(() => parseSweep(text, '--concurrency', whole)).toThrow(BenchUsageError);
    expect(() => parseSweep(text, '--concurrency', whole)).toThrow(message);
  });

  it('still sweeps by a factor that moves the start, rounding to whole numbers', () => {
    expect(parseSweep('1:8:x1.5', 'c', whole)).toEqual([1, 2, 3, 5, 8]);
    expect(parseSweep('10:20:x1.1', 'c', whole)).toEqual([10, 11, 12, 13, 15, 16, 18, 19]);
    expect(parseSweep('4:8:x1.1', 'c', whole)).toEqual([4, 5, 6, 7, 8]);
  });
});
