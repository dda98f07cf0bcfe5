import { describe, expect, it, vi } from 'vitest';

import { QueueFullError } from '../../sdk/errors.js';
import { ManualClock } from './clock.js';
import type { SequenceRow } from './sequence-router.js';
import { callerSequenceLimit, SequenceRouter, sequenceKey } from './sequence-router.js';

type Batch = { lane: number; rows: (string | null)[] };

/** A router over `lanes` instances whose batches are recorded as payload names (null: filler). */
function router(
  strategy: 'direct' | 'oldest',
  batchSize: number,
  lanes = 1,
  maxCandidateSequences?: number,
  maxSequenceIdleUs = 1e12,
) {
  const batches: Batch[] = [];
  const clock = new ManualClock();
  const r = new SequenceRouter<string>(
    {
      strategy,
      batchSize,
      maxSequenceIdleUs,
      model: 'm',
      ...(maxCandidateSequences ? { maxCandidateSequences } : {}),
    },
    (lane, rows: SequenceRow<string>[]) => {
      batches.push({ lane, rows: rows.map((row) => (row.filler ? null : row.payload)) });
    },
    clock,
  );
  for (let i = 0; i < lanes; i++) r.addLane();
  // Each request arrives 1 µs after the one before.
  const send = (payload: string, id: bigint | string, start = false, end = false, caller?: string) => {
    clock.advance(1);
    r.enqueue(payload, { id, start, end, ...(caller === undefined ? {} : { caller }) }, (e) => {
      throw e;
    });
  };
  return { r, batches, send, clock };
}

describe('sequence router', () => {
  it('direct: keeps each sequence in its slot, fills idle slots below the last busy one, one request per sequence per batch', () => {
    const { r, batches, send } = router('direct', 3);
    send('a1', 1n, true); // lane idle: runs alone in slot 0
    send('b1', 2n, true); // slot 1
    send('a2', 1n);
    send('b2', 2n);
    send('c1', 3n, true); // slot 2
    r.release(0); // next batch: each slot's oldest request: a2, b1, c1
    send('c2', 3n);
    r.release(0); // a has nothing queued: a filler row holds slot 0
    r.release(0); // nothing left: no batch
    expect(batches).toEqual([
      { lane: 0, rows: ['a1'] },
      { lane: 0, rows: ['a2', 'b1', 'c1'] },
      { lane: 0, rows: [null, 'b2', 'c2'] },
    ]);
  });

  it('direct: a sequence waiting for a slot takes the one an END frees, in the batch after it, never alongside', () => {
    const { r, batches, send } = router('direct', 1);
    send('a1', 1n, true, false);
    send('b1', 2n, true); // no slot: waits
    send('a2', 1n, false, true); // END
    r.release(0); // a2 runs; its slot goes to b once dispatched
    expect(batches).toEqual([
      { lane: 0, rows: ['a1'] },
      { lane: 0, rows: ['a2'] },
    ]);
    r.release(0);
    expect(batches.at(-1)).toEqual({ lane: 0, rows: ['b1'] });
    expect(batches).toHaveLength(3);
  });

  it('oldest: takes the oldest request of each sequence, up to the batch size, no fillers', () => {
    const { r, batches, send } = router('oldest', 2, 1, 4);
    send('a1', 1n, true);
    send('b1', 2n, true);
    send('c1', 3n, true);
    send('a2', 1n); // newer than b1 and c1
    r.release(0);
    r.release(0);
    expect(batches).toEqual([
      { lane: 0, rows: ['a1'] },
      { lane: 0, rows: ['b1', 'c1'] },
      { lane: 0, rows: ['a2'] },
    ]);
  });

  it('places new sequences on the lane with the fewest, and refuses a request with no START or after END', () => {
    const { batches, send } = router('direct', 2, 2);
    send('a1', 1n, true);
    send('b1', 2n, true);
    expect(batches.map((b) => b.lane)).toEqual([0, 1]);
    expect(() => send('x', 9n)).toThrow(/must specify the START flag/);
    send('a2', 1n, false, true);
    expect(() => send('a3', 1n)).toThrow(/after its END request/);
  });

  it("keys sequences by caller: another caller's id is an unknown sequence, and the same id starts its own", () => {
    const { r, batches, send } = router('direct', 4);
    send('a1', 7n, true, false, 'alice');
    expect(() => send('m1', 7n, false, false, 'mallory')).toThrow(/must specify the START flag/);
    expect(() => send('m1', 7n, false, true, 'mallory')).toThrow(/must specify the START flag/);
    send('m1', 7n, true, false, 'mallory');
    expect(() => send('a2', 7n, true, false, 'alice')).toThrow(/already in progress/);
    send('a2', 7n, false, true, 'alice');
    r.release(0);
    expect(batches.at(-1)?.rows).toEqual(['a2', 'm1']);
    expect(r.has(sequenceKey('mallory', 7n))).toBe(true);
    expect(r.has(sequenceKey('alice', 7n))).toBe(false);
  });

  it('limits each caller to half the slots (429), leaves the rest to others, and gives a slot back on END', () => {
    const { r, send } = router('direct', 4, 1);
    expect(callerSequenceLimit(r.slots)).toBe(2);
    send('a1', 1n, true, false, 'alice');
    send('a2', 2n, true, false, 'alice');
    expect(() => send('a3', 3n, true, false, 'alice')).toThrow(QueueFullError);
    expect(() => send('a3', 3n, true, false, 'alice')).toThrow(/2 sequences open .*half of its 4 sequence slots/);
    send('b1', 1n, true, false, 'bob');
    send('b2', 2n, true, false, 'bob');
    send('a1e', 1n, false, true, 'alice');
    r.release(0);
    send('a3', 3n, true, false, 'alice');
    // A node with no API keys has one caller (''): not limited, as before.
    const solo = router('direct', 2, 1);
    for (const id of [1n, 2n, 3n, 4n]) solo.send(`s${id}`, id, true);
    expect(solo.r.activeSequences).toBe(4);
  });

  it("releases a caller's abandoned sequences after max_sequence_idle_microseconds, and their count with them", () => {
    vi.useFakeTimers();
    try {
      const { r, send, clock } = router('direct', 2, 1, undefined, 2_000_000);
      send('a1', 1n, true, false, 'alice');
      expect(() => send('a2', 2n, true, false, 'alice')).toThrow(QueueFullError);
      r.release(0);
      clock.advance(2_000_001);
      vi.advanceTimersByTime(1000);
      expect(r.activeSequences).toBe(0);
      send('a2', 2n, true, false, 'alice');
      expect(r.activeSequences).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });
});
