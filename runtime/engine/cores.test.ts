import { expect, it } from 'vitest';

import { parseQuota, readUsable, usableCores } from './cores.js';

it("reads a cgroup's CPU quota as cores, v2's and v1's, and none where it is unlimited", () => {
  expect(parseQuota('max 100000')).toBeUndefined();
  expect(parseQuota('-1 100000')).toBeUndefined();
  expect(parseQuota('200000 100000')).toBe(2);
  expect(parseQuota('150000 100000')).toBe(1.5);
  expect(parseQuota('')).toBeUndefined();
  expect(parseQuota(undefined)).toBeUndefined();
});

it('bounds the CPUs by a quota below them, rounded up, and never to less than one', () => {
  expect(readUsable(16, undefined)).toEqual({ cores: 16, from: 'cpus' });
  expect(readUsable(16, 2)).toEqual({ cores: 2, from: 'cgroup-quota', quota: 2 });
  expect(readUsable(16, 1.5)).toEqual({ cores: 2, from: 'cgroup-quota', quota: 1.5 });
  expect(readUsable(2, 4)).toEqual({ cores: 2, from: 'cpus' });
  expect(readUsable(16, 0.2)).toEqual({ cores: 1, from: 'cgroup-quota', quota: 0.2 });
});

it('finds this process’s own cores (at least one, at most its CPUs)', () => {
  const { cores } = usableCores();
  expect(cores).toBeGreaterThanOrEqual(1);
});
