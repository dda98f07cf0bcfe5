/**
 * A failure's first line as a deployer is shown it (a version's `reason`): a runner's error, which
 * a model writes (its __setstate__ raises what it likes), cut to one bounded, printable line that
 * names no path of the node.
 */

// Control and format characters: C0/C1 controls, escapes, bidi overrides and isolates, zero-widths.
const UNPRINTABLE = /[\p{Cc}\p{Cf}\u2028\u2029]+/gu;
// An absolute path: the node's data dir, a runner's folder, a build machine's source tree.
const ABSOLUTE_PATH = /(?<![\w.~:/-])\/[^\s"'`<>|,;:()[\]{}]+/g;

/** The message's first line, unprintables as spaces, absolute paths as `<path>`, at most `max` characters. */
export function safeLine(message: string, max = 300): string {
  const newline = message.search(/[\n\u2028\u2029]/);
  const first = newline === -1 ? message : message.slice(0, newline);
  // Cut before cleaning too, so a megabyte of noise costs no megabyte of regex work.
  const line = first
    .slice(0, max * 4)
    .replace(UNPRINTABLE, ' ')
    .replace(ABSOLUTE_PATH, '<path>')
    .replace(/\s+/g, ' ')
    .trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
