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

/** `kill -9` of a harness daemon; resolves with its pid once it is gone. */
export async function killDaemon(name: Daemon): Promise<number> {
  const pid = await requireDaemonPid(name);
  await killProcess(pid, 'SIGKILL');
  return pid;
}

/**
 * Runs `test/cluster/up.sh`, which starts every daemon that is not running (and waits for each to
 * be healthy; for the agent, for the node to report Ready). Rejects with the script's output tail.
 */
export async function clusterUp(): Promise<void> {
  try {
    await run('bash', [path.join(REPO_DIR, 'test', 'cluster', 'up.sh')], { timeout: 600_000, maxBuffer: 16 * 1024 * 1024 });
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
