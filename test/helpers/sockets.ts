/**
 * Which process sent a request: the client end of a loopback TCP connection, found in Linux's
 * /proc/net/tcp by its two ports, and its socket inode among each candidate process's descriptors.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** The pid among `pids` whose socket is `clientPort` → `serverPort`, or undefined. */
export function connectionOwner(clientPort: number, serverPort: number, pids: number[]): number | undefined {
  const inode = socketInode(clientPort, serverPort);
  if (inode === undefined) return undefined;
  const link = `socket:[${inode}]`;
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === link) return pid;
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined;
}

function socketInode(clientPort: number, serverPort: number): string | undefined {
  const hex = (port: number) => port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      if (f[1]!.endsWith(`:${hex(clientPort)}`) && f[2]!.endsWith(`:${hex(serverPort)}`)) return f[9];
    }
  }
  return undefined;
}
