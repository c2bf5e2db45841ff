/**
 * Process control over the test cluster's daemons for fault tests: find a daemon by the pid file
 * the harness wrote (`.cluster/pids/<name>.pid`), kill it, and bring back whatever is missing with
 * `test/cluster/up.sh` (idempotent: running daemons are kept; a missing agent is rebuilt first).
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { eventually } from '../e2e/helpers.js';

const run = promisify(execFile);

const REPO_DIR = path.resolve(import.meta.dirname, '..', '..');
const CLUSTER_DIR = process.env.CLUSTER_DIR ?? path.join(REPO_DIR, '.cluster');

/** The harness daemons fault tests stop. Names are those of the pid files. */
export type Daemon = 'nodelet' | 'containerd' | 'kube-apiserver' | 'redis';

export const ALL_DAEMONS: readonly Daemon[] = ['containerd', 'kube-apiserver', 'redis', 'nodelet'];

/** True while the process exists and is not a zombie (a killed daemon awaiting its reaper is gone). */
export async function isAlive(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== undefined && state !== 'Z';
  } catch {
    return false;
  }
}

/** The pid of a harness daemon, or `undefined` when its pid file is missing or names a dead process. */
export async function daemonPid(name: Daemon): Promise<number | undefined> {
  let text: string;
  try {
    text = await readFile(path.join(CLUSTER_DIR, 'pids', `${name}.pid`), 'utf8');
  } catch {
    return undefined;
  }
  const pid = Number.parseInt(text.trim(), 10);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  return (await isAlive(pid)) ? pid : undefined;
}

/** The pid of a daemon that must be running; throws naming it otherwise. */
export async function requireDaemonPid(name: Daemon): Promise<number> {
  const pid = await daemonPid(name);
  if (pid === undefined) throw new Error(`${name} is not running (no live pid in ${CLUSTER_DIR}/pids/${name}.pid)`);
  return pid;
}

/** Sends `signal` to a process and waits until it has exited. */
export async function killProcess(pid: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  process.kill(pid, signal);
  await eventually(`process ${pid} to exit after ${signal}`, async () => ((await isAlive(pid)) ? undefined : true), 30_000);
}

/** Stops the harness's agent as `down.sh` would (SIGTERM), and waits until it has exited; no-op when none runs. */
export async function stopHarnessAgent(): Promise<void> {
  const pid = await daemonPid('nodelet');
  if (pid !== undefined) await killProcess(pid, 'SIGTERM');
}

/** Clock ticks per second of `/proc/<pid>/stat` start times (`getconf CLK_TCK`; 100 on Linux). */
const CLOCK_TICKS_PER_SECOND = 100;

/** How long the process has been running, in milliseconds (from `/proc`; 10 ms resolution). */
export async function processAgeMs(pid: number): Promise<number> {
  const [stat, uptime] = await Promise.all([readFile(`/proc/${pid}/stat`, 'utf8'), readFile('/proc/uptime', 'utf8')]);
  // Field 22 (starttime) counted from the field after the command name, which may contain spaces.
  const startTicks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  const uptimeSeconds = Number(uptime.split(' ')[0]);
  return Math.round(uptimeSeconds * 1000 - (startTicks / CLOCK_TICKS_PER_SECOND) * 1000);
}

/** `kill -9` of a harness daemon; resolves with its pid once it is gone. */
export async function killDaemon(name: Daemon): Promise<number> {
  const pid = await requireDaemonPid(name);
  await killProcess(pid, 'SIGKILL');
  return pid;
}

/**
 * A command line that runs `command args…` with every inherited file descriptor above 2 closed.
 * The daemons `up.sh` starts (and an agent a test starts) inherit whatever the test process got
 * from its parent; a descriptor holding a lock (the cluster wrapper's flock) would keep that lock
 * held by the daemon long after the test ended, locking everyone else out of the cluster.
 */
export function withoutInheritedFds(command: string, args: readonly string[]): [string, string[]] {
  const closeThenExec = 'for fd in /proc/$$/fd/*; do n=${fd##*/}; if [[ $n =~ ^[0-9]+$ ]] && (( n > 2 )); then eval "exec $n>&-"; fi; done; exec "$@"';
  return ['bash', ['-c', closeThenExec, 'bash', command, ...args]];
}

/** How `clusterUp` runs `up.sh`. */
export interface ClusterUpOptions {
  /**
   * Start a missing agent from the build already in `dist/` (`NODELET_AGENT_PREBUILT=1`, the
   * default), as an operator's restart does: the cluster's `up.sh` built it from this tree before
   * the suite started (npm test rebuilds it first). `false` rebuilds it (about 11 s) before starting it.
   */
  readonly prebuiltAgent?: boolean;
}

/**
 * Runs `test/cluster/up.sh`, which starts every daemon that is not running (and waits for each to
 * be healthy; for the agent, for the node to report Ready). Rejects with the script's output tail.
 */
export async function clusterUp(options: ClusterUpOptions = {}): Promise<void> {
  try {
    const [command, args] = withoutInheritedFds('bash', [path.join(REPO_DIR, 'test', 'cluster', 'up.sh')]);
    const env = options.prebuiltAgent === false ? process.env : { ...process.env, NODELET_AGENT_PREBUILT: '1' };
    await run(command, args, { timeout: 600_000, maxBuffer: 16 * 1024 * 1024, env });
  } catch (error) {
    const output = error instanceof Error && 'stderr' in error ? String(error.stderr).slice(-2000) : String(error);
    throw new Error(`test/cluster/up.sh failed: ${output}`);
  }
}

/** Starts whatever harness daemon is missing (a previous fault test may have left one down). */
export async function ensureClusterUp(): Promise<void> {
  const pids = await Promise.all(ALL_DAEMONS.map((name) => daemonPid(name)));
  if (pids.some((pid) => pid === undefined)) await clusterUp();
}

/** `redis-cli FLUSHALL` on the harness Redis (REDIS_URL's port; 16379 by default). */
export async function flushRedis(): Promise<void> {
  const port = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:16379').port || '6379';
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', port, 'FLUSHALL'], { timeout: 30_000 });
  if (stdout.trim() !== 'OK') throw new Error(`FLUSHALL answered ${stdout.trim()}`);
}
