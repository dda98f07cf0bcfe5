/**
 * The two loops against a real node:http server through the real HTTP sender: the closed loop
 * holds exactly `concurrency` requests at the server at once (counted there), and rate mode wakes
 * on timers, about once a request, instead of spinning (counted, not timed: a busy machine does not
 * decide it).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { httpTarget } from './http-target.js';
import { closedLoop, openLoop } from './loops.js';

let server: Server;
let url: string;
/**
 * How many requests the server holds its answers for, until that many are at once at it (then it
 * answers them all), or for a second at most: a barrier, not a timer, so that a busy machine that
 * opens the connections slowly still sees all of them in flight. 0: it answers at once.
 */
let gather = 0;
let inFlight = 0;
let maxSeen = 0;
let held: (() => void)[] = [];

const releaseHeld = (): void => {
  const answers = held;
  held = [];
  for (const answer of answers) answer();
};

beforeAll(async () => {
  server = createServer((req, res) => {
    inFlight++;
    maxSeen = Math.max(maxSeen, inFlight);
    req.resume();
    req.on('end', () => {
      const answer = () => {
        inFlight--;
        res.end('{}');
      };
      if (gather === 0) return answer();
      held.push(answer);
      if (held.length >= gather) releaseHeld();
      else setTimeout(releaseHeld, 1000).unref();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const sender = (connections: number) =>
  httpTarget({
    url,
    path: '/x',
    bodies: [{ bytes: new TextEncoder().encode('{}'), contentType: 'application/json' }],
    connections,
    timeoutMs: 10_000,
  });

describe('bench loops', () => {
  it.each([1, 3, 8])('the closed loop keeps exactly %i requests in flight at the server', async (c) => {
    gather = c;
    maxSeen = 0;
    const s = await sender(c);
    const r = await closedLoop(s, c, { requests: 20 * c });
    await s.close();
    expect(r).toMatchObject({ requests: 20 * c, ok: 20 * c });
    expect(maxSeen).toBe(c);
    expect(inFlight).toBe(0);
  });

  it('rate mode wakes on a timer about once a request, never spinning through setImmediate', async () => {
    gather = 0;
    const requests = 200;
    const s = await sender(4);
    // Spies that call through: every timer and immediate armed in this process while the loop runs.
    const immediates = vi.spyOn(globalThis, 'setImmediate');
    const timeouts = vi.spyOn(globalThis, 'setTimeout');
    const r = await openLoop(s, 400, 4, { requests });
    const armed = immediates.mock.calls.length + timeouts.mock.calls.length;
    immediates.mockRestore();
    timeouts.mockRestore();
    await s.close();
    expect(r).toMatchObject({ requests, ok: requests, late: expect.any(Number) });
    // At 400/s for 0.5 s, re-arming with setImmediate under 1 ms armed about 3000 here (15 a request).
    expect(armed).toBeLessThanOrEqual(3 * requests);
    expect(r.wakeups).toBeGreaterThan(0);
    expect(r.wakeups).toBeLessThanOrEqual(armed);
  });
});
