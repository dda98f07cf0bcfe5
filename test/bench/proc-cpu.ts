/** CPU time from Linux's /proc: a process's own, and its children's (a node's runners). */
import { readdirSync, readFileSync } from 'node:fs';

const TICK = 100; // clock ticks per second (getconf CLK_TCK)

/** A process's parent, its own CPU ticks, and those of its children it has waited for (ended). */
function stat(pid: string): { ppid: number; ticks: number; ended: number } {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]), ended: Number(f[13]) + Number(f[14]) };
}

/** CPU seconds so far of `pid` itself and of its live children. */
export function cpuSeconds(pid: number): { own: number; children: number } {
  let own = 0;
  let children = 0;
  for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const s = stat(p);
      if (Number(p) === pid) own += s.ticks;
      else if (s.ppid === pid) children += s.ticks;
    } catch {
      // gone meanwhile
    }
  }
  return { own: own / TICK, children: children / TICK };
}

/**
 * CPU seconds so far of `pid` itself and of all its descendants (a node's runners, under their
 * hearth-jail launchers too), those that ended included (a runner replaced or scaled away takes
 * its CPU out of /proc: it counts in its parent's waited-for children's time).
 */
export function treeSeconds(pid: number): { own: number; descendants: number } {
  const parent = new Map<number, number>();
  const ticks = new Map<number, number>();
  let ended = 0;
  for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const s = stat(p);
      parent.set(Number(p), s.ppid);
      ticks.set(Number(p), s.ticks + (Number(p) === pid ? 0 : s.ended));
      if (Number(p) === pid) ended = s.ended;
    } catch {
      // gone meanwhile
    }
  }
  let descendants = ended;
  for (const [p, t] of ticks) {
    for (let up = parent.get(p); up !== undefined && up > 1; up = parent.get(up))
      if (up === pid) {
        descendants += t;
        break;
      }
  }
  return { own: (ticks.get(pid) ?? 0) / TICK, descendants: descendants / TICK };
}

/** Percent of one core that `pid` (own, its children, and both) used over `seconds` from now. */
export async function cpuOver(pid: number, seconds: number): Promise<{ own: number; children: number; total: number }> {
  const before = cpuSeconds(pid);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const after = cpuSeconds(pid);
  const pct = (a: number, b: number) => Number((((a - b) / seconds) * 100).toFixed(2));
  const own = pct(after.own, before.own);
  const children = pct(after.children, before.children);
  return { own, children, total: Number((own + children).toFixed(2)) };
}

/**
 * Waits (up to `maxMs`) until `pid` and its descendants are quiet: under `share` of one core over a
 * quarter of a second. A load generator that stops leaves requests in flight (a 64-client cell of
 * ResNet-sized bodies, seconds of work): the next cell, and the servers measured beside it, would
 * share the cores with their tail.
 */
export async function untilQuiet(pid: number, share = 0.1, maxMs = 60_000): Promise<void> {
  const step = 250;
  const total = () => {
    const t = treeSeconds(pid);
    return t.own + t.descendants;
  };
  for (let waited = 0; waited < maxMs; waited += step) {
    const before = total();
    await new Promise((resolve) => setTimeout(resolve, step));
    if (total() - before < (share * step) / 1000) return;
  }
}
