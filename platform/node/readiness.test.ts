import { describe, expect, it } from 'vitest';

import { Readiness } from './readiness.js';

describe('Readiness', () => {
  it('holds requests while starting and lets them on when it serves; a serving node admits at once', async () => {
    const r = new Readiness();
    expect(r.ready()).toBe(false);
    const held = r.admit();
    let settled = false;
    void held!.then(() => {
      settled = true;
    });
    await new Promise((done) => setTimeout(done, 10));
    expect(settled).toBe(false);
    r.serve();
    await held;
    expect(r.ready()).toBe(true);
    expect(r.admit()).toBeUndefined();
  });

  it('refuses held and new requests once it stops, and a held one whose deadline passes or caller goes', async () => {
    const r = new Readiness();
    const held = r.admit();
    r.stop();
    await expect(held).rejects.toMatchObject({ code: 'UNAVAILABLE', message: 'this node stopped while it started' });
    await expect(r.admit()).rejects.toMatchObject({ code: 'UNAVAILABLE' });

    const starting = new Readiness();
    await expect(starting.admit({ deadline: performance.now() + 5 })).rejects.toMatchObject({
      code: 'DEADLINE_EXCEEDED',
    });
    const gone = new AbortController();
    const abandoned = starting.admit({ signal: gone.signal });
    gone.abort();
    await expect(abandoned).rejects.toMatchObject({ code: 'CANCELLED' });
  });
});
