import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { SnapshotSender } from './snapshots.js';

describe('a runner sending its snapshots', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('sends every 250 ms while the snapshot changes, nothing new while idle but every 5 s, wakes on work, and sends a change of its own at once', () => {
    let state = 0;
    const sent: number[] = [];
    const taken: number[] = [];
    const sender = new SnapshotSender(
      () => {
        taken.push(Date.now());
        return { state };
      },
      (s) => sent.push(s.state),
    );
    const t0 = Date.now();
    /** When the snapshot was read while `ms` go by, from the start. */
    const readsOver = (ms: number) => {
      taken.length = 0;
      vi.advanceTimersByTime(ms);
      return taken.map((t) => t - t0);
    };
    sender.start();
    // Changing: a snapshot each 250 ms.
    for (let i = 1; i <= 4; i++) {
      state = i;
      vi.advanceTimersByTime(250);
    }
    expect(sent).toEqual([1, 2, 3, 4]);
    // Idle from here: the first unchanged read is not sent; reads slow to 500 ms, then 1 s.
    expect(readsOver(10_000)).toEqual([1250, 1750, 2750, 3750, 4750, 5750, 6750, 7750, 8750, 9750, 10750]);
    // Sent again only once 5 s went by since the last send (at 1000 ms): at 6750, then not before 11750.
    expect(sent).toEqual([1, 2, 3, 4, 4]);
    // A message from the node: back to 250 ms at once, and a change is sent on the next read.
    state = 5;
    sender.wake();
    expect(readsOver(250)).toEqual([11_250]);
    expect(sent.at(-1)).toBe(5);
    // Idle again, then a change in the pool by itself: read and sent at once, then every 250 ms.
    vi.advanceTimersByTime(3000);
    state = 6;
    sender.now();
    expect(readsOver(0)).toEqual([14_250]);
    expect(sent.at(-1)).toBe(6);
    expect(readsOver(250)).toEqual([14_500]);
    sender.stop();
    expect(readsOver(5000)).toEqual([]);
  });
});
