/**
 * The TCP connections this process holds open to a port, read from the kernel (`/proc/self/fd`
 * and `/proc/self/net/tcp{,6}`), so a test can tell whether a client really closed its sockets
 * without asking the client.
 */
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

/** TCP states that are not an open connection: TIME_WAIT, CLOSE, LISTEN. */
const NOT_OPEN = new Set(['06', '07', '0A']);

function ownSocketInodes(): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // closed between the listing and the read
    }
    const match = /^socket:\[(\d+)\]$/.exec(target);
    if (match?.[1] !== undefined) inodes.add(match[1]);
  }
  return inodes;
}

/** How many open TCP connections this process has to `port` on any address. */
export function openConnectionsTo(port: number): number {
  const inodes = ownSocketInodes();
  let count = 0;
  for (const table of ['/proc/self/net/tcp', '/proc/self/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const remote = fields[2];
      const state = fields[3];
      const inode = fields[9];
      if (remote === undefined || state === undefined || inode === undefined) continue;
      const remotePort = Number.parseInt(remote.split(':')[1] ?? '', 16);
      if (remotePort === port && !NOT_OPEN.has(state) && inodes.has(inode)) count++;
    }
  }
  return count;
}
