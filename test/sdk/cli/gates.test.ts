/**
 * The gates before traffic and the failures they leave visible, through the CLI against a node: a
 * hook that does not type-check is refused at deploy with tsc's file:line (and, deployed with
 * --no-typecheck, fails its smoke request instead); a hook that throws on a call answers one line
 * and leaves its phase, its hook.ts frame and the request id in `hearth logs --errors`; a new
 * version that fails the spec's example (the smoke request) is failed, and traffic stays where it
 * was — on the version before, which still answers as python3-torch does.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, expect, it } from 'vitest';

import { cliIn } from '../../helpers/cli.js';
import { testNode } from '../../helpers/node.js';
import { maxAbsDiff } from '../../helpers/random.js';
import { pythonForward } from '../../helpers/reference.js';
import { waitFor } from '../../helpers/wait.js';

const dir = await mkdtemp(join(tmpdir(), 'hearth-gates-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const { hearth, parsed } = cliIn(dir);

it('refuses an ill-typed hook, logs a hook that throws, and keeps traffic off a version that fails its smoke request', async () => {
  const node = await testNode(join(dir, 'node'));
  const url = node.httpUrl;
  try {
    const fn = join(dir, 'gated');
    const init = await parsed<{ name: string }>(url, 'init', fn);
    // The scaffold's spec has an example: the first version answers it before it takes traffic.
    expect(await readFile(join(fn, 'hearth.yaml'), 'utf8')).toMatch(/^example: /m);
    expect(await parsed<{ version: number; status: string }>(url, 'deploy', fn)).toMatchObject({
      version: 1,
      status: 'ready',
    });
    const x = [[1, 2, 3, 4]];
    const answer = await parsed<{ outputs: number[][] }>(
      url,
      'invoke',
      init.name,
      '--data',
      JSON.stringify({ inputs: x }),
    );
    const reference = pythonForward(join(fn, 'model.pt'), [
      { dtype: 'FP32', shape: [1, 4], data: Float32Array.from(x.flat()) },
    ]).outputs[0]!.data as Float32Array;
    expect(maxAbsDiff(Float32Array.from(answer.outputs.flat()), reference)).toBeLessThan(1e-6);

    // A hook that does not type-check against the SDK is refused with tsc's file:line, before any
    // upload; --no-typecheck deploys it anyway.
    const illTyped = join(dir, 'ill-typed');
    await cp(fn, illTyped, { recursive: true });
    await writeFile(
      join(illTyped, 'hearth.yaml'),
      (await readFile(join(fn, 'hearth.yaml'), 'utf8')).replace(`name: ${init.name}`, 'name: ill-typed'),
    );
    await writeFile(
      join(illTyped, 'hook.ts'),
      [
        "import { defineHook } from '@hearth/sdk';",
        'export default defineHook({',
        '  pre(request) {',
        "    if (request.kind !== 'json') throw new Error('json');",
        '    const body = request.json as { inputs: number[][] };',
        '    const rows: string = body.inputs.length;',
        "    return { x: { dtype: 'FP33', shape: [rows.length, 4], data: new Float32Array(4) } };",
        '  },',
        '  post: (outputs) => ({ outputs: outputs.y }),',
        '});',
        '',
      ].join('\n'),
    );
    const refused = await hearth(url, 'deploy', illTyped);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/hook\.ts does not type-check \(2 errors; --no-typecheck deploys it anyway\)/);
    expect(refused.err).toMatch(/^hook\.ts:6:11 - error TS2322: Type 'number' is not assignable to type 'string'\./m);
    expect(refused.err).toMatch(/^hook\.ts:3:3 - error TS2322: [\s\S]*Type '"FP33"' is not assignable/m);
    expect((await parsed<{ name: string }[]>(url, 'ls')).map((f) => f.name)).toEqual([init.name]);
    // Deployed unchecked, it fails its smoke request (the spec's example) instead: no traffic.
    const unchecked = await hearth(url, 'deploy', illTyped, '--no-typecheck');
    expect(unchecked.code).toBe(1);
    expect(unchecked.err).toMatch(/ill-typed v1 failed to load: the smoke request \(the spec's example\) failed/);
    // Every version failed: `hearth top` and the function list say failing, with the reason.
    const top = await parsed<{ function: string; state: string; reason?: string }[]>(url, 'top', '--once');
    expect(top.find((r) => r.function === 'ill-typed')).toMatchObject({
      state: 'failing',
      reason: expect.stringMatching(/^v1 failed: the smoke request \(the spec's example\) failed/),
    });
    expect(top.find((r) => r.function === init.name)?.state).not.toBe('failing');
    expect((await hearth(url, 'top', '--once')).out).toMatch(/^ill-typed failing: v1 failed: the smoke request/m);
    await parsed(url, 'delete', 'ill-typed', '--yes');

    // A hook that throws on one input: the call is a 500 with one line; the function's log has it
    // whole — phase, the frame in hook.ts, the request id — and `hearth logs --errors` finds it.
    const hook = await readFile(join(fn, 'hook.ts'), 'utf8');
    const throwing = hook.replace(
      'pre(request, ctx) {',
      "pre(request, ctx) {\n    if (JSON.stringify(request.kind === 'json' ? request.json : null).includes('666')) throw new Error('pre broke on 666');",
    );
    await writeFile(join(fn, 'hook.ts'), throwing);
    expect((await parsed<{ version: number; status: string }>(url, 'deploy', fn)).version).toBe(2);
    const line = throwing.split('\n').findIndex((l) => l.includes('pre broke on 666')) + 1;
    const broken666 = await fetch(`${url}/fn/${init.name}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'req-666' },
      body: JSON.stringify({ inputs: [[666, 0, 0, 0]] }),
    });
    expect(broken666.status).toBe(500);
    expect(((await broken666.json()) as { error: string }).error).toBe(
      `hook ${init.name}/hook.ts failed in pre: pre broke on 666`,
    );
    const errors = await hearth(url, 'logs', init.name, '--errors');
    expect(errors.out.trim().split('\n')[0]).toMatch(
      /error +HOOK_FAILED in pre: hook .* failed in pre: pre broke on 666$/,
    );
    expect(errors.out).toMatch(new RegExp(`at (Object\\.)?pre \\(hook\\.ts:${line}:\\d+\\)`));
    expect(errors.out).toContain('[req-666]');
    // Under the version whose call failed.
    const ofV2 = await hearth(url, 'logs', init.name, '--errors', '--version', '2');
    expect(ofV2.out).toMatch(/ v2 error +error +HOOK_FAILED in pre: .*pre broke on 666/);
    // The lifecycle lines and the hook's console are not errors.
    expect(errors.out).not.toMatch(/ info /);
    // Most of its recent calls failing: `hearth top` says failing, with the latest failure.
    for (let i = 0; i < 8; i++)
      await fetch(`${url}/fn/${init.name}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: [[666, 0, 0, 0]] }),
      });
    const failingRow = await waitFor(
      'the function to show as failing',
      async () =>
        (await parsed<{ function: string; state: string; reason?: string }[]>(url, 'top', '--once')).find(
          (r) => r.function === init.name,
        ),
      (r) => r?.state === 'failing',
    );
    expect(failingRow!.reason).toMatch(/^HOOK_FAILED in pre: hook .* failed in pre: pre broke on 666$/);

    // A hook that type-checks but throws on the example: the new version fails, traffic stays on v2.
    await writeFile(
      join(fn, 'hook.ts'),
      hook.replace('post(outputs) {', "post(outputs) {\n    throw new Error('post broke');"),
    );
    const smoked = await hearth(url, 'deploy', fn);
    expect(smoked.code).toBe(1);
    expect(smoked.err).toMatch(/v3 failed to load: the smoke request \(the spec's example\) failed: .*post broke/);
    const after = await parsed<{ version: number; status: string; traffic: number }[]>(url, 'versions', init.name);
    expect(after.map((v) => [v.version, v.status, v.traffic])).toEqual([
      [1, 'ready', 0],
      [2, 'ready', 100],
      [3, 'failed', 0],
    ]);
    const still = await parsed<{ outputs: number[][] }>(
      url,
      'invoke',
      init.name,
      '--data',
      JSON.stringify({ inputs: x }),
    );
    expect(still.outputs).toEqual(answer.outputs);
    expect((await hearth(url, 'logs', init.name, '--version', '3')).out).toMatch(
      /smoke request \(spec example\) failed: HOOK_FAILED: .*post broke\n.*at (Object\.)?post \(hook\.ts:\d+:\d+\)/,
    );
    await writeFile(join(fn, 'hook.ts'), hook);
  } finally {
    await node.close();
  }
}, 240_000);
