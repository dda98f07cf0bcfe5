/**
 * A post's JSON answer is printed in the sandbox by its own walk (numbers one by one, faster than
 * JSON.stringify): its text must be JSON.stringify's, byte for byte, for every kind of value —
 * checked against JSON.stringify here on the same values made the same way.
 */
import { describe, expect, it } from 'vitest';

import { jsonShapes } from '../../fixtures/hooks/json-shapes-values.js';
import { json, pool, y } from './hook-pools.js';

describe("a post's JSON answer", () => {
  it("is JSON.stringify's text for every kind of value, on a thread and inline", async () => {
    const hooks = await pool('json-shapes', { sandbox: true, inline: true, threads: 1 });
    const shapes = jsonShapes();
    const expected = shapes.map((v) => JSON.stringify(v));
    for (const inline of [true, false]) {
      const outs = await hooks.post(
        shapes.map((_, i) => ({ outputs: y([[0, 0, 0]]), request: json({ i }) })),
        { inline },
      );
      const texts = outs.map((o) => (o.ok ? new TextDecoder().decode(o.body) : o.error.message));
      expect(texts).toEqual(expected);
      // A cycle fails that request, as JSON.stringify throws on it.
      const [cycle] = await hooks.post([{ outputs: y([[0, 0, 0]]), request: json({ i: -1 }) }], { inline });
      expect(cycle!.ok ? 'answered' : cycle!.error.message).toMatch(/failed in post: .*circular/i);
    }
  });
});
