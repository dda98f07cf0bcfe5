/**
 * A hook's failure, named in its own source: the frames of an error thrown in the isolate point at
 * the bundle (`hook.mjs:412:11`); the bundle's inline source map (esbuild's, sdk/hooks/bundle.ts)
 * turns them into the lines the developer wrote (`hook.ts:6:11`), for the function's log.
 */
import { SourceMap } from 'node:module';

const INLINE_MAP = /\/\/# sourceMappingURL=data:application\/json;(?:charset=utf-8;)?base64,([A-Za-z0-9+/=]+)\s*$/;
/** Frames kept of a stack: what a reader needs, not a runaway recursion's thousands. */
const MAX_FRAMES = 20;

/** The source map a bundle carries at its end, or undefined (none, or not one Node can read). */
export function inlineSourceMap(code: string): SourceMap | undefined {
  const found = INLINE_MAP.exec(code.slice(-4 * 2 ** 20));
  if (!found) return undefined;
  try {
    return new SourceMap(JSON.parse(Buffer.from(found[1]!, 'base64').toString('utf8')));
  } catch {
    return undefined;
  }
}

/**
 * `at post (hook.mjs:412:11)` → `at post (hook.ts:6:11)`: the stack's frames (not its message line),
 * Hearth's own glue left out, each bundle position mapped back where the map knows it.
 */
export function mapStack(stack: string, map: SourceMap | undefined): string {
  return stack
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
        return `${entry.originalSource.replace(/^file:\/\//, '')}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
      }),
    )
    .join('\n');
}
