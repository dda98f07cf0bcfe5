// `hearth deploy --canary`'s flags and its verdict in sentences, without a node: the latency limit
// may be off, the window's default is said once in the help, a rollback names the split as shares
// and sends to the failed calls' log only when errors decided it. test/sdk/cli/canary.test.ts runs
// the real CLI against a real node.
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';

import type { Canary } from '../../api/index.js';
import { CanaryRequestSchema, splitShares } from '../../api/index.js';
import type { CliContext } from '../context.js';
import { integer } from '../context.js';
import { canaryRequest, register, rolledBackText } from './deploy.js';

/** The deploy verb over no node: its help, or the canary its flags ask for. */
function deployVerb() {
  const context = {
    client: () => undefined,
    json: () => false,
    print: () => undefined,
    integer,
  } as unknown as CliContext;
  const program = new Command('hearth').exitOverride();
  register(program, context);
  const deploy = program.commands.find((c) => c.name() === 'deploy')!;
  deploy.exitOverride().configureOutput({ writeErr: () => undefined });
  return { program, deploy };
}

async function requested(...flags: string[]) {
  const { program, deploy } = deployVerb();
  let asked: unknown;
  deploy.action((_dir: string, o: Parameters<typeof canaryRequest>[0]) => {
    asked = canaryRequest(o);
  });
  await program.parseAsync(['deploy', 'fn', ...flags], { from: 'user' });
  return asked;
}

describe('hearth deploy --canary flags', () => {
  it("says --canary-window's default once, as a duration", () => {
    const help = deployVerb().deploy.helpInformation().replace(/\s+/g, ' ');
    const line = help.slice(help.indexOf('--canary-window'), help.indexOf('--canary-max-error-rate'));
    expect(line.match(/default/g)).toEqual(['default']);
    expect(line).toMatch(/\(default: 60s\)/);
  });

  it('takes --canary-max-p99 off, a ratio, or refuses anything else by name', async () => {
    expect(await requested('--canary', '10', '--canary-max-p99', 'off')).toEqual({
      percent: 10,
      windowMs: 60_000,
      maxP99Ratio: 'off',
    });
    expect(await requested('--canary', '10', '--canary-max-p99', '2', '--canary-window', '5m')).toEqual({
      percent: 10,
      windowMs: 300_000,
      maxP99Ratio: 2,
    });
    await expect(requested('--canary', '10', '--canary-max-p99', 'of')).rejects.toThrow(
      '--canary-max-p99 is a ratio from 1 to 1000, or off',
    );
  });

  it('the API takes maxP99Ratio "off" and refuses other words', () => {
    expect(CanaryRequestSchema.parse({ percent: 10, windowMs: 60_000, maxP99Ratio: 'off' }).maxP99Ratio).toBe('off');
    expect(CanaryRequestSchema.safeParse({ percent: 10, windowMs: 60_000, maxP99Ratio: 'none' }).success).toBe(false);
    expect(CanaryRequestSchema.safeParse({ percent: 10, windowMs: 60_000, maxP99Ratio: 0.5 }).success).toBe(false);
  });
});

describe('a rollback in sentences', () => {
  const decided = (o: Partial<Canary>): Canary => ({
    version: 2,
    percent: 10,
    windowMs: 60_000,
    maxErrorRate: 5,
    maxP99Ratio: 1.5,
    minCalls: 10,
    baseline: { 1: 100 },
    split: { 1: 90, 2: 10 },
    startedAt: '2026-12-07T00:00:00.000Z',
    state: 'rolled-back',
    ...o,
  });
  const r = { name: 'clf', version: 2 };

  it('for latency: the split as shares, no error code, no errors log to read', () => {
    const text = rolledBackText(
      r,
      decided({
        cause: 'latency',
        reason: "v2's p90 88 ms against 41 ms on v1 is over 1.5× (errors 0.0% over 120 calls against 0.0% on v1)",
      }),
    );
    expect(text).toBe(
      "clf v2 was rolled back by its canary: v2's p90 88 ms against 41 ms on v1 is over 1.5× (errors 0.0% over 120 calls against 0.0% on v1). Traffic is back on v1 100%.",
    );
  });

  it('for errors: where its failed calls are', () => {
    expect(rolledBackText(r, decided({ cause: 'errors', reason: 'v2 failed 3 of 10 calls' }))).toBe(
      'clf v2 was rolled back by its canary: v2 failed 3 of 10 calls. Traffic is back on v1 100%. Its failed calls: hearth logs clf --errors --version 2',
    );
  });

  it('for too few calls: how to give it more', () => {
    expect(rolledBackText(r, decided({ cause: 'calls', reason: 'only 4 calls reached v2' }))).toMatch(
      /Traffic is back on v1 100%\. Send it more traffic, or give it a longer --canary-window or a lower --canary-min-calls\.$/,
    );
  });

  it('splits as shares of their weights', () => {
    expect(splitShares({ 1: 100 })).toBe('v1 100%');
    expect(splitShares({ 1: 50, 3: 150, 4: 0 })).toBe('v1 25%, v3 75%');
    expect(splitShares({ 1: 1, 2: 2 })).toBe('v1 33.3%, v2 66.7%');
  });
});
