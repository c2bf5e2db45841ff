/**
 * The running agent as a process: its pid (the harness's pid file), its worker concurrency (its
 * command line), CPU time from `/proc/<pid>/stat` and resident memory sampled from
 * `/proc/<pid>/status`. VmHWM would be the peak since the process started, not during the run, so
 * the peak is the largest VmRSS seen by sampling every 100 ms.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { RequestOptions } from 'node:https';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * How to reach the agent's node server (port 10250 on the node's IP) as the API server does: the
 * cluster CA, which signs the node's serving certificate, and the API server's kubelet client
 * certificate.
 */
export async function nodeServerOptions(clusterDir: string, nodeIp: string): Promise<RequestOptions> {
  const pki = path.join(clusterDir, 'pki');
  const [ca, cert, key] = await Promise.all(['ca.crt', 'apiserver-kubelet-client.crt', 'apiserver-kubelet-client.key'].map((f) => readFile(path.join(pki, f))));
  return { host: nodeIp, port: 10250, ca, cert, key };
}

/** The agent's pid from `<clusterDir>/pids/nodelet.pid`; throws when it is not running. */
export async function agentPid(clusterDir: string): Promise<number> {
  const pid = Number.parseInt((await readFile(path.join(clusterDir, 'pids', 'nodelet.pid'), 'utf8')).trim(), 10);
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  if (!cmdline.includes('nodelet')) throw new Error(`the agent is not running (pid file names ${pid})`);
  return pid;
}

/** The `--concurrency` the agent was started with, or its default (4). */
export async function agentConcurrency(pid: number): Promise<number> {
  const args = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
  const flag = args.findIndex((a) => a === '--concurrency' || a.startsWith('--concurrency='));
  const value = flag < 0 ? undefined : args[flag]?.includes('=') ? args[flag].split('=')[1] : args[flag + 1];
  const parsed = Number.parseInt(value ?? '', 10);
  return Number.isInteger(parsed) && parsed > 0 ? parsed : 4;
}

let clockTicks: number | undefined;

/** The kernel's clock ticks per second (`getconf CLK_TCK`), the unit of `/proc`'s CPU times; read once. */
export async function ticksPerSecond(): Promise<number> {
  if (clockTicks === undefined) {
    const { stdout } = await run('getconf', ['CLK_TCK']);
    clockTicks = Number.parseInt(stdout.trim(), 10) || 100;
  }
  return clockTicks;
}

/** User + system CPU seconds the process has used so far. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start at state, field 3; utime is 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return (utime + stime) / (await ticksPerSecond());
}

/** Resident memory in bytes (VmRSS). */
export async function rssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kib === undefined) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(kib) * 1024;
}

/** Samples VmRSS every `intervalMs` and keeps the largest value. */
export class RssSampler {
  private peak = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pid: number,
    private readonly intervalMs = 100,
  ) {}

  start(): void {
    const sample = (): void => {
      rssBytes(this.pid).then(
        (bytes) => {
          this.peak = Math.max(this.peak, bytes);
        },
        () => undefined,
      );
    };
    sample();
    this.timer = setInterval(sample, this.intervalMs);
  }

  /** Stops sampling; returns the peak in bytes. */
  stop(): number {
    clearInterval(this.timer);
    return this.peak;
  }
}
