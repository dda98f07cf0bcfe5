/**
 * A node's runner processes, from Linux's /proc: a jailed runner is the child of its hearth-jail
 * launcher (itself the node's child); an unjailed one is the node's child.
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

/** The runner processes of the node `nodePid` (the spare among them). */
export async function runnerProcesses(nodePid: number): Promise<ProcessInfo[]> {
  const all = await processes();
  const launchers = new Set(
    all.filter((p) => p.ppid === nodePid && p.args[0]?.endsWith('/hearth-jail')).map((p) => p.pid),
  );
  // Its other children (esbuild's service) are not runners.
  return all.filter(
    (p) =>
      (launchers.has(p.ppid) || p.ppid === nodePid) &&
      !p.args[0]?.endsWith('/hearth-jail') &&
      p.args.includes('--experimental-permission'),
  );
}
