/**
 * The I/O behind `/metrics/cadvisor`: reads a cgroup's control files (v1: in each hierarchy; v2:
 * the unified directory), its processes' descriptors, a process's network counters and limits.
 * Parsing is in cgroup-stats.ts. A cgroup that vanished between listing and reading (a container
 * that exited mid-scrape) reads as `undefined`, never an error; every read takes the scrape's
 * AbortSignal so a stuck filesystem cannot hold the scrape past its deadline.
 */
import { readdir, readFile, readlink, stat } from 'node:fs/promises';
import path from 'node:path';
import type { CgroupLayout } from '../reconcilers/cgroups/host-cgroupfs.js';
import { parseMaxOpenFiles, parseNetDev, parseV1Cgroup, parseV2Cgroup, type CgroupFigures, type InterfaceFigures } from './cgroup-stats.js';

/** One cgroup read at one moment. */
export interface CgroupReading {
  readonly figures: CgroupFigures;
  /** Processes of the cgroup itself (not of its children), from `cgroup.procs`. */
  readonly pids: readonly number[];
  /** Milliseconds since the epoch: the earliest change time of its directories (cAdvisor's creation time). */
  readonly createdAtMs: number | undefined;
  /** When the files were read (milliseconds since the epoch). */
  readonly readAtMs: number;
}

/** A cgroup hierarchy to read from; ids are absolute cgroup paths (`/`, `/kubepods/burstable`). */
export interface CgroupTree {
  readonly version: 1 | 2;
  /** The names of a cgroup's child cgroups; none when it is gone. */
  children(id: string, signal: AbortSignal): Promise<string[]>;
  /** The cgroup's figures; `undefined` when it no longer exists. */
  read(id: string, signal: AbortSignal): Promise<CgroupReading | undefined>;
}

function isGone(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENODEV' || code === 'ESRCH';
}

/** A file's text, or undefined when it (or its cgroup) is not there. Other errors are thrown. */
async function optional(file: string, signal: AbortSignal): Promise<string | undefined> {
  try {
    return await readFile(file, { encoding: 'utf8', signal });
  } catch (error) {
    if (isGone(error)) return undefined;
    throw error;
  }
}

async function readAll(dir: string, names: readonly string[], signal: AbortSignal, into: Map<string, string>): Promise<void> {
  const texts = await Promise.all(names.map((name) => optional(path.join(dir, name), signal)));
  names.forEach((name, i) => {
    const text = texts[i];
    if (text !== undefined) into.set(name, text);
  });
}

function pidsOf(text: string | undefined): number[] {
  return (text ?? '').split('\n').filter((l) => /^\d+$/.test(l.trim())).map(Number);
}

/** The earliest mtime of the directories and their marker files (the directory's own mtime moves when children come and go). */
async function createdAt(entries: readonly string[]): Promise<number | undefined> {
  const times = await Promise.all(
    entries.map(async (entry) => {
      try {
        return (await stat(entry)).mtimeMs;
      } catch (error) {
        if (isGone(error)) return undefined;
        throw error;
      }
    }),
  );
  const known = times.filter((t): t is number => t !== undefined);
  return known.length === 0 ? undefined : Math.min(...known);
}

async function childDirs(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch (error) {
    if (isGone(error)) return [];
    throw error;
  }
}

/** The v1 files read per subsystem (a hierarchy mounting several reads each's). */
const V1_FILES: Readonly<Record<string, readonly string[]>> = {
  cpu: ['cpu.stat', 'cpu.shares', 'cpu.cfs_period_us', 'cpu.cfs_quota_us'],
  cpuacct: ['cpuacct.usage', 'cpuacct.stat'],
  memory: ['memory.usage_in_bytes', 'memory.max_usage_in_bytes', 'memory.failcnt', 'memory.kmem.usage_in_bytes', 'memory.stat', 'memory.use_hierarchy', 'memory.oom_control', 'memory.limit_in_bytes', 'memory.memsw.limit_in_bytes', 'memory.soft_limit_in_bytes'],
  blkio: ['blkio.io_service_bytes_recursive', 'blkio.io_serviced_recursive', 'blkio.throttle.io_service_bytes_recursive', 'blkio.throttle.io_serviced_recursive'],
  pids: ['pids.current', 'pids.max'],
};

/** The v2 files of a cgroup. */
const V2_FILES: readonly string[] = ['cpu.stat', 'cpu.weight', 'cpu.max', 'memory.current', 'memory.peak', 'memory.stat', 'memory.swap.current', 'memory.events', 'memory.max', 'memory.swap.max', 'memory.min', 'io.stat', 'pids.current', 'pids.max', 'cgroup.procs'];

/** cgroup v1: one directory per hierarchy; the `cpu` hierarchy's directory decides whether the cgroup exists. */
class V1Tree implements CgroupTree {
  readonly version = 1;
  private readonly mounts: readonly { readonly dir: string; readonly subsystems: readonly string[] }[];
  private readonly cpuDir: string | undefined;

  constructor(hierarchies: readonly { readonly mountpoint: string; readonly subsystems: readonly string[] }[]) {
    this.mounts = hierarchies.filter((h) => h.subsystems.some((s) => s in V1_FILES)).map((h) => ({ dir: h.mountpoint, subsystems: h.subsystems }));
    this.cpuDir = hierarchies.find((h) => h.subsystems.includes('cpu'))?.mountpoint;
  }

  children(id: string): Promise<string[]> {
    return this.cpuDir === undefined ? Promise.resolve([]) : childDirs(path.join(this.cpuDir, id));
  }

  async read(id: string, signal: AbortSignal): Promise<CgroupReading | undefined> {
    if (this.cpuDir === undefined) return undefined;
    const readAtMs = Date.now();
    const procs = await optional(path.join(this.cpuDir, id, 'cgroup.procs'), signal);
    if (procs === undefined) return undefined;
    const files = new Map<string, string>();
    for (const mount of this.mounts) {
      const names = mount.subsystems.flatMap((s) => V1_FILES[s] ?? []);
      await readAll(path.join(mount.dir, id), names, signal, files);
    }
    const created = await createdAt(this.mounts.flatMap((m) => [path.join(m.dir, id), path.join(m.dir, id, 'cgroup.clone_children')]));
    return { figures: parseV1Cgroup(files), pids: pidsOf(procs), createdAtMs: created, readAtMs };
  }
}

/** cgroup v2: one directory holds every controller's files. */
class V2Tree implements CgroupTree {
  readonly version = 2;

  constructor(private readonly mountpoint: string) {}

  children(id: string): Promise<string[]> {
    return childDirs(path.join(this.mountpoint, id));
  }

  async read(id: string, signal: AbortSignal): Promise<CgroupReading | undefined> {
    const dir = path.join(this.mountpoint, id);
    const readAtMs = Date.now();
    const files = new Map<string, string>();
    await readAll(dir, V2_FILES, signal, files);
    if (!files.has('cgroup.procs')) return undefined;
    const created = await createdAt([dir, path.join(dir, 'cgroup.events')]);
    return { figures: parseV2Cgroup(files), pids: pidsOf(files.get('cgroup.procs')), createdAtMs: created, readAtMs };
  }
}

/** The tree of a host's cgroup layout; undefined on a host without a cgroup filesystem. */
export function cgroupTreeOf(layout: CgroupLayout): CgroupTree | undefined {
  if (layout.version === 1) return new V1Tree(layout.hierarchies);
  if (layout.version === 2) return new V2Tree(layout.mountpoint);
  return undefined;
}

/** Descriptors and sockets of some processes, as cAdvisor counts them (a process gone meanwhile counts nothing). */
export async function countDescriptors(procDir: string, pids: readonly number[], signal: AbortSignal): Promise<{ fds: number; sockets: number }> {
  let fds = 0;
  let sockets = 0;
  for (const pid of pids) {
    signal.throwIfAborted();
    const dir = path.join(procDir, String(pid), 'fd');
    let entries: string[];
    try {
      entries = await readdir(dir);
    } catch {
      continue;
    }
    fds += entries.length;
    const links = await Promise.all(entries.map((e) => readlink(path.join(dir, e)).catch(() => '')));
    sockets += links.filter((l) => l.startsWith('socket')).length;
  }
  return { fds, sockets };
}

/** A process's network interfaces (its network namespace's `/proc/<pid>/net/dev`); undefined when unreadable. */
export async function readInterfaces(procDir: string, pid: number, signal: AbortSignal): Promise<InterfaceFigures[] | undefined> {
  const text = await optional(path.join(procDir, String(pid), 'net', 'dev'), signal).catch(() => undefined);
  return text === undefined ? undefined : parseNetDev(text);
}

/** A process's soft limit on open files; undefined when unreadable. */
export async function readMaxOpenFiles(procDir: string, pid: number, signal: AbortSignal): Promise<number | undefined> {
  const text = await optional(path.join(procDir, String(pid), 'limits'), signal).catch(() => undefined);
  return text === undefined ? undefined : parseMaxOpenFiles(text);
}
