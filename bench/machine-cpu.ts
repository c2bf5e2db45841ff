/**
 * The whole machine's CPU time at one instant, for the CPU-split benchmark: every process's CPU
 * so far (`/proc/<pid>/stat`) and the machine's busy and idle time (`/proc/stat`). The parsers
 * are pure; `takeCpuSnapshot` reads `/proc`.
 */
import { readdir, readFile } from 'node:fs/promises';
import { ticksPerSecond } from './agent-process.js';

/** One process's CPU time so far. */
export interface ProcessCpu {
  readonly pid: number;
  readonly ppid: number;
  /** The kernel's name of the process (`comm`, at most 15 characters). */
  readonly name: string;
  /** Clock ticks after boot at which it started: with the pid, tells a reused pid apart. */
  readonly startTicks: number;
  /**
   * utime + stime of the process and of its children it has waited for (cutime + cstime), so a
   * short-lived child (runc, a mount helper) counts with the parent that reaped it.
   */
  readonly cpuSeconds: number;
}

/** The machine's CPU time over every core since boot (`/proc/stat`'s `cpu` line). */
export interface MachineCpu {
  /** user + nice + system + irq + softirq + steal. */
  readonly busySeconds: number;
  /** idle + iowait. */
  readonly idleSeconds: number;
}

export interface CpuSnapshot {
  readonly processes: readonly ProcessCpu[];
  readonly machine: MachineCpu;
}

/** One `/proc/<pid>/stat` line, or undefined when it is not one. Pure. */
export function parseProcessStat(text: string, ticksPerSecond: number): ProcessCpu | undefined {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  // After the name (which may hold spaces and parentheses) come state (field 3), ppid (4), …,
  // utime (14), stime (15), cutime (16), cstime (17), …, starttime (22).
  const fields = text.slice(close + 2).trim().split(' ');
  const numbers = [1, 11, 12, 13, 14, 19].map((i) => Number(fields[i]));
  if (numbers.some((n) => !Number.isFinite(n))) return undefined;
  const [ppid = 0, utime = 0, stime = 0, cutime = 0, cstime = 0, startTicks = 0] = numbers;
  return {
    pid: Number(text.slice(0, open).trim()),
    ppid,
    name: text.slice(open + 1, close),
    startTicks,
    cpuSeconds: (utime + stime + cutime + cstime) / ticksPerSecond,
  };
}

/** The `cpu` line of `/proc/stat`. Pure. */
export function parseMachineStat(text: string, ticksPerSecond: number): MachineCpu {
  const line = text.split('\n').find((l) => l.startsWith('cpu '));
  if (line === undefined) throw new Error('no cpu line in /proc/stat');
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line.trim().split(/\s+/).slice(1).map(Number);
  return { busySeconds: (user + nice + system + irq + softirq + steal) / ticksPerSecond, idleSeconds: (idle + iowait) / ticksPerSecond };
}

/** Every process's CPU time and the machine's, read now. A process that exits meanwhile is left out. */
export async function takeCpuSnapshot(): Promise<CpuSnapshot> {
  const ticks = await ticksPerSecond();
  const pids = (await readdir('/proc')).filter((entry) => /^\d+$/.test(entry));
  const stats = await Promise.all(pids.map((pid) => readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined)));
  const processes = stats.flatMap((text) => {
    const parsed = text === undefined ? undefined : parseProcessStat(text, ticks);
    return parsed === undefined ? [] : [parsed];
  });
  return { processes, machine: parseMachineStat(await readFile('/proc/stat', 'utf8'), ticks) };
}
