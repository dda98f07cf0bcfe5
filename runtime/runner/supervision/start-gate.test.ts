import { expect, it } from 'vitest';

import { StartGate } from './start-gate.js';

it('runs at most its limit at once, the others in the order they came', async () => {
  const gate = new StartGate(2);
  const log: string[] = [];
  let running = 0;
  let most = 0;
  const releases: (() => void)[] = [];
  const task = (name: string) =>
    gate.run(async () => {
      running++;
      most = Math.max(most, running);
      log.push(`start ${name}`);
      await new Promise<void>((resolve) => releases.push(resolve));
      running--;
      return name;
    });
  const all = Promise.all(['a', 'b', 'c', 'd'].map(task));
  await new Promise((r) => setImmediate(r));
  expect(log).toEqual(['start a', 'start b']);
  releases.shift()!();
  await new Promise((r) => setImmediate(r));
  expect(log).toEqual(['start a', 'start b', 'start c']);
  while (releases.length) {
    releases.shift()!();
    await new Promise((r) => setImmediate(r));
  }
  expect(await all).toEqual(['a', 'b', 'c', 'd']);
  expect(log.at(-1)).toBe('start d');
  expect(most).toBe(2);
});

it('frees its slot when a task fails', async () => {
  const gate = new StartGate(1);
  await expect(gate.run(() => Promise.reject(new Error('no')))).rejects.toThrow('no');
  expect(await gate.run(async () => 'next')).toBe('next');
});
