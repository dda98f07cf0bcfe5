import { describe, expect, it } from 'vitest';

import { safeLine } from './safe-line.js';

describe('safeLine', () => {
  it('keeps the first line, controls and bidi overrides as spaces, absolute paths as <path>', () => {
    const raw = '\u202ePWNED\r\u000b\u001b[2J /var/lib/hearth/secrets/secrets.key\tat code/__torch__.py:3\nsecond line';
    expect(safeLine(raw)).toBe('PWNED [2J <path> at code/__torch__.py:3');
  });

  it('cuts a huge line to the bound, ending with an ellipsis', () => {
    const line = safeLine(`boom ${'\u0007x'.repeat(1_000_000)}`, 300);
    expect(line).toHaveLength(300);
    expect(line.endsWith('…')).toBe(true);
    expect(line).not.toMatch(/[\p{Cc}\p{Cf}]/u);
  });

  it('leaves URLs, relative paths and ordinary messages alone', () => {
    expect(safeLine('see https://example.com/docs and code/__torch__/m.py; 2/3 done')).toBe(
      'see https://example.com/docs and code/__torch__/m.py; 2/3 done',
    );
  });
});
