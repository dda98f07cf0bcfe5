/**
 * A hook's failure, named in its own source: the frames of an error thrown in the isolate point at
 * the bundle (`hook.mjs:412:11`); the bundle's inline source map (esbuild's, sdk/hooks/bundle.ts)
 * turns them into the lines the developer wrote (`hook.ts:6:11`), for the function's log.
 */
import { SourceMap } from 'node:module';

import { clipBytes } from '../../sdk/text.js';

const INLINE_MAP = /\/\/# sourceMappingURL=data:application\/json;(?:charset=utf-8;)?base64,([A-Za-z0-9+/=]+)\s*$/;
/**
 * The largest inline map read (its base64 text): esbuild's map of a hook, its sources' text left
 * out (sdk/hooks/bundle.ts), is a few hundred KiB even with large libraries bundled in. A larger one
 * is ignored and the frames stay as bundle positions (`hook.mjs:412:11`): a map is the tenant's
 * bytes, and its names end up in the function's log.
 */
export const MAX_INLINE_MAP = 2 * 2 ** 20;
/** Frames kept of a stack: what a reader needs, not a runaway recursion's thousands. */
const MAX_FRAMES = 20;
/** A mapped frame's source name, each frame, and the whole stack, in bytes, cut after mapping. */
const MAX_SOURCE = 256;
const MAX_FRAME = 512;
export const MAX_STACK = 8 * 1024;

/** The source map a bundle carries at its end, or undefined (none, too large, or not one Node can read). */
export function inlineSourceMap(code: string): SourceMap | undefined {
  // The map and its marker are the bundle's last bytes; a map past MAX_INLINE_MAP is not matched.
  const found = INLINE_MAP.exec(code.slice(-(MAX_INLINE_MAP + 1024)));
  if (!found || found[1]!.length > MAX_INLINE_MAP) return undefined;
  try {
    return new SourceMap(JSON.parse(Buffer.from(found[1]!, 'base64').toString('utf8')));
  } catch {
    return undefined;
  }
}

/**
 * `at post (hook.mjs:412:11)` → `at post (hook.ts:6:11)`: the stack's frames (not its message line),
 * Hearth's own glue left out, each bundle position mapped back where the map knows it. What comes
 * back is cut after mapping: each source name to MAX_SOURCE bytes, each frame to MAX_FRAME, the
 * whole to MAX_STACK (a map's names are the tenant's, and as long as it likes).
 */
export function mapStack(stack: string, map: SourceMap | undefined): string {
  const frames = stack
    .split('\n')
    .filter((line) => /^\s+at /.test(line) && !line.includes('hearth-glue'))
    .slice(0, MAX_FRAMES)
    .map((frame) =>
      frame.replace(/hook\.mjs:(\d+):(\d+)/, (whole, line: string, column: string) => {
        const entry = map?.findEntry(Number(line) - 1, Number(column) - 1) as
          | { originalSource?: string; originalLine?: number; originalColumn?: number }
          | undefined;
        if (!entry?.originalSource || entry.originalLine === undefined || entry.originalColumn === undefined)
          return whole;
        const source = clipBytes(entry.originalSource.replace(/^file:\/\//, ''), MAX_SOURCE);
        return `${source}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
      }),
    )
    .map((frame) => clipBytes(frame, MAX_FRAME));
  return clipBytes(frames.join('\n'), MAX_STACK);
}
