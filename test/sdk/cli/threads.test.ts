/**
 * Threads that fit the host: a deploy whose intra-op threads × instances are more than the cores the
 * node may use is warned at deploy (the API's `warnings`, the CLI's `warning:` line), and `hearth
 * describe` says, for each version that takes traffic, its threads per forward × the instances that
 * may run at once on this node's cores, and what a lone request is lent.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { HearthNode } from '../../../platform/node/index.js';
import type { FunctionInfo } from '../../../sdk/api/index.js';
import { cliIn } from '../../helpers/cli.js';
import { testNode } from '../../helpers/node.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-threads-'));
afterAll(() => rm(dir, { recursive: true, force: true }));
const { hearth, parsed } = cliIn(dir);

describe('threads × instances against the cores', () => {
  let node: HearthNode;
  beforeAll(async () => {
    node = await testNode(join(dir, 'node'));
    expect((await hearth(node.httpUrl, 'init', 'thready')).code).toBe(0);
  }, 120_000);
  afterAll(() => node.close());

  it('warns at deploy and in describe when they are more than the cores, and not when they fit', async () => {
    const fn = join(dir, 'thready');
    // 64 threads a forward: more than this node's cores on any machine the suite runs on.
    const over = await hearth(node.httpUrl, 'deploy', fn, '--threads', '64', '--instances', '2', '--wait');
    expect(over.code, over.err).toBe(0);
    const warning =
      /^warning: thready may run 2 instances × 64 intra-op threads = 128 threads on the (\d+) cores? this node may use: its forwards would wait for each other \(set instances\.threads to \d+ or fewer instances\.count, --threads on a deploy\)$/m;
    expect(over.err).toMatch(warning);
    const cores = Number(warning.exec(over.err)![1]);
    const info = await parsed<FunctionInfo>(node.httpUrl, 'describe', 'thready');
    expect(info.threads?.['1']).toMatchObject({ cores, threadsPerInstance: 64, instances: 2, lentWhenAlone: false });
    const text = (await hearth(node.httpUrl, 'describe', 'thready')).out;
    expect(text).toContain(
      `threads (this node, ${cores} core${cores === 1 ? '' : 's'}): v1 64 intra-op threads × up to 2 instances\n`,
    );
    expect(text).toMatch(/^warning: thready may run 2 instances × 64 intra-op threads/m);

    // The node's default threads and one instance to start: no warning; a lone forward is lent every core.
    const fits = await hearth(node.httpUrl, 'deploy', fn, '--wait');
    expect(fits.code, fits.err).toBe(0);
    expect(fits.err).not.toMatch(/^warning:/m);
    const after = await parsed<FunctionInfo>(node.httpUrl, 'describe', 'thready');
    const plan = after.threads?.['2'];
    expect(plan).toMatchObject({ cores, lentWhenAlone: true });
    expect(plan!.threadsPerInstance * plan!.instances).toBeLessThanOrEqual(cores);
    expect(plan!.warning).toBeUndefined();
    const now = (await hearth(node.httpUrl, 'describe', 'thready')).out;
    // Only the version that takes traffic is described; v1's warning is gone with its traffic.
    expect(now).toMatch(
      new RegExp(
        `^threads \\(this node, ${cores} cores?\\): v2 \\d+ intra-op threads? × up to \\d+ instances?; a lone request's forward is lent all ${cores}$`,
        'm',
      ),
    );
    expect(now).not.toMatch(/^warning:/m);
  }, 180_000);
});
