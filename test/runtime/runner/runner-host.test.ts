/**
 * What a node leaves behind when it dies: its runners die with it (hearth-jail dies with its node,
 * and the runner with hearth-jail), and the next node to start removes their folders.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, expect, it } from 'vitest';

import { RunnerHost } from '../../../runtime/index.js';

const dead = spawnSync('true').pid!;
const stale = join(tmpdir(), `hearth-runners-${dead}-test`);
const live = join(tmpdir(), `hearth-runners-${process.ppid}-test`);
afterAll(async () => {
  await rm(stale, { recursive: true, force: true });
  await rm(live, { recursive: true, force: true });
});

it("removes the runner folders of a node that died as it starts, and keeps a live node's", async () => {
  await mkdir(join(stale, 'r1', 'tmp'), { recursive: true });
  await mkdir(join(live, 'r1'), { recursive: true });
  const host = new RunnerHost({});
  try {
    await host.warm();
    expect(host.spareError).toBeUndefined();
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(live)).toBe(true);
  } finally {
    await host.close();
  }
});

it('starts runners without the jail where hearth-jail is missing, saying why; strict starts none', async () => {
  process.env.HEARTH_JAIL = '/nonexistent/hearth-jail';
  try {
    const host = new RunnerHost({});
    try {
      await host.warm();
      expect(host.spareError).toBeUndefined();
      expect(host.sandbox?.notes).toEqual([expect.stringMatching(/^hearth-jail is not at \/nonexistent\/hearth-jail/)]);
    } finally {
      await host.close();
    }
    const strict = new RunnerHost({ sandbox: 'strict' });
    try {
      await strict.warm();
      expect(strict.spareError).toMatch(/^HEARTH_SANDBOX=strict: hearth-jail is not at/);
    } finally {
      await strict.close();
    }
  } finally {
    delete process.env.HEARTH_JAIL;
  }
});

it('starts runners without an arena where the kernel makes none, saying so once', async () => {
  const failures: string[] = [];
  // No memfd can be 1 PiB: creating it fails as the kernel refusing would.
  const host = new RunnerHost({ arenaBytes: 2 ** 50, onArenaFailed: (why) => failures.push(why) });
  try {
    await host.warm();
    expect(host.spareError).toBeUndefined();
    expect(failures).toEqual([expect.stringMatching(/arena/)]);
  } finally {
    await host.close();
  }
});
