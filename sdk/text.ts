/** Text cut to a size in bytes, for logs whose input a tenant controls. */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * `text` in at most `maxBytes` bytes of UTF-8, with `mark` (counted in) where it was cut: a
 * character split by the cut is left out, never half-kept. Text already short enough is returned as
 * it is; a long one is cut in characters before it is encoded, so a huge string costs no huge copy.
 */
export function clipBytes(text: string, maxBytes: number, mark = '…'): string {
  // A UTF-16 unit is at most 3 bytes of UTF-8: text this short fits without measuring.
  if (text.length * 3 <= maxBytes) return text;
  const head = text.slice(0, maxBytes);
  const bytes = encoder.encode(head);
  if (bytes.length <= maxBytes && head.length === text.length) return text;
  const room = Math.max(0, maxBytes - encoder.encode(mark).length);
  // fatal: false drops the partial character at the cut as U+FFFD; trimmed off here.
  return `${decoder.decode(bytes.subarray(0, room)).replace(/\uFFFD$/, '')}${mark}`;
}

/** `text`'s size in bytes of UTF-8. */
export function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
