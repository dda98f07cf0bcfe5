// The verbs' own logic, called directly: argument parsing, what each asks of the node and what it
// prints. The node is a recording stand-in here; test/sdk/cli runs the real CLI against a real node.
import { Command, CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';

import type { FunctionInfo, Hearth } from '../../client.js';
import { parseSpec } from '../../spec/index.js';
import type { CliContext } from '../context.js';
import { integer } from '../context.js';
import { parseSince } from './logs.js';
import { register as rollback } from './rollback.js';
import { register as scale } from './scale.js';
import { register as traffic } from './traffic.js';

const SPEC = parseSpec({
  name: 'f',
  model: 'model.pt',
  inputs: [{ name: 'x', dtype: 'FP32', dims: [4] }],
  outputs: [{ name: 'y', dtype: 'FP32', dims: [4] }],
  scaling: { minInstances: 0, maxInstances: 4 },
});
const ARTIFACTS = { model: 'a'.repeat(64) };

/** A function with v1 ready, v2 failed, v3 ready, and `split` as its traffic. */
function info(split: Record<string, number>): FunctionInfo {
  return {
    name: 'f',
    createdAt: '2026-12-01T00:00:00Z',
    traffic: split,
    pools: [],
    versions: [1, 2, 3].map((version) => ({
      version,
      status: version === 2 ? 'failed' : 'ready',
      createdAt: '2026-12-01T00:00:00Z',
      spec: SPEC,
      artifacts: ARTIFACTS,
    })),
  };
}

/** Runs `hearth <args>` with the verbs above over a stand-in node; what it was asked and what it printed. */
async function run(args: string[], split: Record<string, number> = { 3: 100 }, json = false) {
  const calls: { method: string; args: unknown[] }[] = [];
  const printed: string[] = [];
  const node = {
    describe: async (name: string) => {
      calls.push({ method: 'describe', args: [name] });
      return info(split);
    },
    setTraffic: async (name: string, weights: Record<string, number>) => {
      calls.push({ method: 'setTraffic', args: [name, weights] });
      return { name, traffic: weights };
    },
    rollback: async (name: string) => {
      calls.push({ method: 'rollback', args: [name] });
      return { name, traffic: split, from: { 1: 90, 3: 10 } };
    },
    scale: async (name: string, scaling: object, version?: number) => {
      calls.push({ method: 'scale', args: [name, scaling, version] });
      return {
        name,
        versions: [{ version: 3, scaling: { ...SPEC.scaling, targetQueueDepth: 8, scaleDownAfterS: 300, ...scaling } }],
      };
    },
  };
  const context: CliContext = {
    client: () => node as unknown as Hearth,
    json: () => json,
    print: (value, table) => printed.push(json ? JSON.stringify(value) : table()),
    integer,
  };
  const program = new Command('hearth').exitOverride();
  for (const verb of [traffic, rollback, scale]) verb(program, context);
  await program.parseAsync(args, { from: 'user' });
  return { calls, printed };
}

describe('CLI verbs', () => {
  it('traffic: VERSION=WEIGHT pairs become the split it sets', async () => {
    const { calls, printed } = await run(['traffic', 'f', '1=90', '3=10']);
    expect(calls).toEqual([{ method: 'setTraffic', args: ['f', { 1: 90, 3: 10 }] }]);
    expect(printed).toEqual(['f: v1=90 v3=10']);
  });

  it('traffic: a weight that is not VERSION=WEIGHT is a usage error, and nothing is sent', async () => {
    await expect(run(['traffic', 'f', '1=most'])).rejects.toMatchObject({
      code: 'hearth.usage',
      message: expect.stringContaining('"1=most" is not VERSION=WEIGHT'),
    });
  });

  it('rollback: asks the node for the split before the last change and prints both', async () => {
    const { calls, printed } = await run(['rollback', 'f'], { 3: 100 });
    expect(calls).toEqual([{ method: 'rollback', args: ['f'] }]);
    expect(printed).toEqual(['f: v1=90 v3=10 → v3=100']);
  });

  it('scale: the flags become the settings changed, of one version with --version', async () => {
    const { calls, printed } = await run(['scale', 'f', '--min', '1', '--target', '8', '--version', '3']);
    expect(calls).toEqual([{ method: 'scale', args: ['f', { minInstances: 1, targetQueueDepth: 8 }, 3] }]);
    expect(printed).toEqual(['f v3: min 1, max 4, target 8, idle 300s']);
  });

  it('scale: asks for at least one setting, and refuses a count that is not a whole number', async () => {
    await expect(run(['scale', 'f'])).rejects.toMatchObject({ code: 'hearth.usage' });
    await expect(run(['scale', 'f', '--max', '2.5'])).rejects.toBeInstanceOf(CommanderError);
  });
});

describe('hearth logs --since', () => {
  const now = Date.parse('2026-12-01T12:00:00Z');
  it('takes a duration back from now or a time', () => {
    expect(parseSince('90s', now)).toBe(now - 90_000);
    expect(parseSince('10m', now)).toBe(now - 600_000);
    expect(parseSince('2h', now)).toBe(now - 7_200_000);
    expect(parseSince('1d', now)).toBe(now - 86_400_000);
    expect(parseSince('2026-12-01T10:00:00Z', now)).toBe(Date.parse('2026-12-01T10:00:00Z'));
  });
  it('refuses anything else as a usage error', () => {
    expect(() => parseSince('yesterday-ish', now)).toThrow(/--since yesterday-ish: give a duration/);
  });
});
