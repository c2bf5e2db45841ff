/**
 * What the hostile run checks on the host itself: the agent's log (no crash, no uncaught
 * exception), files a path traversal could have made outside the pod directories, and what the
 * runtime and the agent's directories still hold of the run's pods after they were deleted.
 */
import { open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { crictl } from '../../e2e/helpers.js';
import { ESCAPE_MARKER } from './types.js';

/** The agent's log file as test/cluster writes it. */
export function agentLogPath(clusterDir: string): string {
  return path.join(clusterDir, 'logs', 'nodelet.log');
}

export async function fileSize(file: string): Promise<number> {
  return (await stat(file)).size;
}

/** What the agent logged after `offset`: lines that are not pino JSON (a crash's stack), fatal lines, and the error count. */
export interface LogScan {
  readonly lines: number;
  readonly errors: number;
  /** Non-JSON lines and level ≥ 60 lines (the first 20). */
  readonly suspicious: string[];
  readonly suspiciousCount: number;
}

const CRASH_WORDS = /uncaught|unhandled ?rejection|FATAL ERROR|heap out of memory/i;

export async function scanAgentLog(file: string, offset: number): Promise<LogScan> {
  const handle = await open(file, 'r');
  let text: string;
  try {
    const size = (await handle.stat()).size;
    const buffer = Buffer.alloc(Math.max(0, size - offset));
    await handle.read(buffer, 0, buffer.length, offset);
    text = buffer.toString('utf8');
  } finally {
    await handle.close();
  }
  const suspicious: string[] = [];
  let lines = 0;
  let errors = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    lines++;
    let level: unknown;
    try {
      level = (JSON.parse(line) as { level?: unknown }).level;
    } catch {
      suspicious.push(line);
      continue;
    }
    if (typeof level === 'number' && level >= 60) suspicious.push(line);
    else if (typeof level === 'number' && level >= 50) errors++;
    if (CRASH_WORDS.test(line) && !suspicious.includes(line)) suspicious.push(line);
  }
  return { lines, errors, suspicious: suspicious.slice(0, 20).map((l) => l.slice(0, 600)), suspiciousCount: suspicious.length };
}

async function entries(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch {
    return [];
  }
}

/**
 * Every path named after the escape marker in the directories a traversal from a pod's volume,
 * log or termination-message path could reach (the ancestors of the agent's pod directories and
 * of the pod logs, /tmp, /, and the hostPath specs' absent parent), two levels deep.
 */
export async function escapedPaths(agentRoot: string, podLogDir: string): Promise<string[]> {
  const roots = new Set<string>(['/', '/tmp', '/var/tmp', '/nonexistent', '/etc', '/dev', '/var/lib', path.join(agentRoot, 'pods'), path.join(agentRoot, 'seccomp'), podLogDir]);
  for (let dir = agentRoot; dir !== path.dirname(dir); dir = path.dirname(dir)) roots.add(dir);
  for (let dir = podLogDir; dir !== path.dirname(dir); dir = path.dirname(dir)) roots.add(dir);
  const found: string[] = [];
  for (const root of roots) {
    for (const name of await entries(root)) {
      const full = path.join(root, name);
      if (name.includes(ESCAPE_MARKER)) found.push(full);
      else if (root !== '/' && root !== '/dev') {
        for (const inner of await entries(full)) if (inner.includes(ESCAPE_MARKER)) found.push(path.join(full, inner));
      }
    }
  }
  return [...new Set(found)].sort();
}

interface CrictlItem {
  readonly id: string;
  readonly labels?: Record<string, string> | null;
}

/** Sandboxes and containers (any state) whose namespace label starts with `prefix`. */
export async function runtimeLeftovers(prefix: string): Promise<{ sandboxes: number; containers: number }> {
  const pods = (JSON.parse(await crictl(['pods', '-o', 'json'])) as { items: CrictlItem[] | null }).items ?? [];
  const containers = (JSON.parse(await crictl(['ps', '-a', '-o', 'json'])) as { containers: CrictlItem[] | null }).containers ?? [];
  const ours = (c: CrictlItem): boolean => (c.labels?.['io.kubernetes.pod.namespace'] ?? '').startsWith(prefix);
  return { sandboxes: pods.filter(ours).length, containers: containers.filter(ours).length };
}

/** The run's pod UIDs that still have a directory under the agent's root, and the run's pod log directories. */
export async function leftoverDirs(options: { readonly agentRoot: string; readonly podLogDir: string; readonly uids: ReadonlySet<string>; readonly namespacePrefix: string }): Promise<string[]> {
  const podDirs = (await entries(path.join(options.agentRoot, 'pods'))).filter((uid) => options.uids.has(uid)).map((uid) => path.join(options.agentRoot, 'pods', uid));
  const logDirs = (await entries(options.podLogDir)).filter((d) => d.startsWith(options.namespacePrefix)).map((d) => path.join(options.podLogDir, d));
  return [...podDirs, ...logDirs];
}
