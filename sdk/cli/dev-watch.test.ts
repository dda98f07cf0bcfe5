import { describe, expect, it } from 'vitest';

import { parseSpec } from '../spec/index.js';
import { curlLine, deploys } from './dev-watch.js';

const base = {
  name: 'f',
  model: 'model.pt',
  inputs: [{ name: 'x', dtype: 'FP32', dims: [4] }],
  outputs: [{ name: 'y', dtype: 'FP32', dims: [3] }],
};

describe('hearth dev', () => {
  it('reloads for the spec, the model, the example file and what the hook may bundle; not for export.py', () => {
    const spec = parseSpec({ ...base, hook: 'hook.ts', exampleFile: 'cat.jpg' });
    for (const file of ['hearth.yaml', 'model.pt', 'cat.jpg', 'hook.ts', 'lib/labels.json', 'package.json'])
      expect(deploys(file, spec), file).toBe(true);
    for (const file of ['export.py', 'notes.md', 'data/train.csv', 'other.pt'])
      expect(deploys(file, spec), file).toBe(false);
    // A folder whose spec does not read (yet): every change is tried.
    expect(deploys('export.py', undefined)).toBe(true);
  });

  it("prints the spec's example as the call to paste, quoted for a shell", () => {
    const url = 'http://127.0.0.1:8000/fn/f';
    expect(curlLine(url, '/w/f', parseSpec({ ...base, example: { text: "it's" } }))).toBe(
      `curl -s ${url} -H 'content-type: application/json' -d '{"text":"it'\\''s"}'`,
    );
    expect(curlLine(url, '/w/f', parseSpec({ ...base, exampleFile: 'cat.jpg' }))).toBe(
      `curl -s ${url} -H 'content-type: image/jpeg' --data-binary @'/w/f/cat.jpg'`,
    );
    expect(curlLine(url, '/w/f', parseSpec(base))).toBe(`curl -s ${url} -H 'content-type: application/json' -d '…'`);
  });
});
