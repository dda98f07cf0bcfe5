/**
 * What a runner prints, as the node reads it: its stdout and stderr cut into lines, each passed on
 * (to the node's log and its function's) under a rate limit, its last lines kept whole for its exit.
 */
import type { ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';

import { limitedLines } from '../wire/index.js';

/** Lines kept for a runner's exit. */
const LOG_LINES = 20;
/** A line the runner has not ended after this many characters is cut there (it could be endless). */
const MAX_PARTIAL = 64 * 1024;

/** Reads `child`'s output: each line to `onLine`, its last LOG_LINES into `last`. */
export function readOutput(child: ChildProcess, last: string[], onLine: (line: string) => void): void {
  // What reaches the node's log and the function's is rate-limited (a model printing in a loop
  // costs its own log lines, not the node's disk); its last lines are kept whole for its exit.
  const emit = limitedLines((line) => onLine(line));
  for (const stream of [child.stdout, child.stderr]) {
    (stream as unknown as Socket | null)?.unref();
    let partial = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (text: string) => {
      const parts = (partial + text).split('\n');
      partial = parts.pop() ?? '';
      if (partial.length > MAX_PARTIAL) {
        parts.push(partial);
        partial = '';
      }
      for (const line of parts) {
        if (!line) continue;
        last.push(line.slice(0, 8192));
        if (last.length > LOG_LINES) last.shift();
        emit(line);
      }
    });
  }
}
