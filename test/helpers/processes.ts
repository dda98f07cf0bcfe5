/**
 * A node's runner processes, from Linux's /proc: a jailed runner is forked by the runner template's
 * supervisor (or, without the template, is its hearth-jail launcher's child); an unjailed one is the
 * node's child.
 */
import { readdir, readFile } from 'node:fs/promises';

export interface ProcessInfo {
  pid: number;
  ppid: number;
  uid: number;
  args: string[];
}

/** Every process on the host, with its parent, uid and command line. */
export async function processes(): Promise<ProcessInfo[]> {
  const out: ProcessInfo[] = [];
  for (const pid of (await readdir('/proc')).filter((d) => /^\d+$/.test(d))) {
    const [status, cmdline] = await Promise.all([
      readFile(`/proc/${pid}/status`, 'latin1').catch(() => ''),
      readFile(`/proc/${pid}/cmdline`, 'latin1').catch(() => ''),
    ]);
    if (!status) continue;
    out.push({
      pid: Number(pid),
      ppid: Number(/^PPid:\s+(\d+)/m.exec(status)?.[1]),
      uid: Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]),
      args: cmdline.split('\0').filter(Boolean),
    });
  }
  return out;
}

/**
 * The runner processes of the node `nodePid` (the spare among them): its descendants that run
 * Node's permission model, but for the runner template and its supervisors (their arguments name
 * the template's folder; a runner forked from it has its own).
 */
export async function runnerProcesses(nodePid: number): Promise<ProcessInfo[]> {
  const all = await processes();
  const byPid = new Map(all.map((p) => [p.pid, p]));
  const descends = (p: ProcessInfo): boolean => {
    for (let q = byPid.get(p.ppid); q; q = byPid.get(q.ppid)) if (q.pid === nodePid) return true;
    return false;
  };
  // Its other descendants (esbuild's service, hearth-jail) are not runners.
  return all.filter(
    (p) =>
      descends(p) &&
      p.args.includes('--experimental-permission') &&
      !p.args[0]?.endsWith('/hearth-jail') &&
      !p.args.some((a) => a.includes('/runner-template-')),
  );
}
