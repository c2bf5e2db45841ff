/**
 * An agent process of the test's own, in place of the harness's: the same command line as
 * `test/cluster/lib/agent.sh` (same node, kubeconfig, Redis, root and log dirs, the `dist/` that
 * `up.sh` built) except that its CRI endpoint is a given socket (a `CriInterposer`). The test owns
 * the process: it kills it at the step it wants, and `stop()` makes sure it is gone whatever
 * happened. Its output goes to `$CLUSTER_DIR/logs/nodelet-interposed.log`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, open } from 'node:fs/promises';
import path from 'node:path';
import { NODE_IP, NODE_NAME } from '../e2e/helpers.js';
import { withoutInheritedFds } from './harness.js';

const REPO_DIR = path.resolve(import.meta.dirname, '..', '..');
const CLUSTER_DIR = process.env.CLUSTER_DIR ?? path.join(REPO_DIR, '.cluster');
const EXIT_TIMEOUT_MS = 30_000;

/** How the process ended. */
export interface AgentExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly atMs: number;
}

export class InterposedAgent {
  /** Resolves when the process has exited, however. */
  readonly exited: Promise<AgentExit>;
  private exit: AgentExit | undefined;

  private constructor(
    private readonly child: ChildProcess,
    readonly logPath: string,
  ) {
    this.exited = once(child, 'exit').then(([code, signal]) => {
      this.exit = { code: code as number | null, signal: signal as NodeJS.Signals | null, atMs: Date.now() };
      return this.exit;
    });
  }

  /** Starts `node bin/nodelet.js` with the harness's arguments and `criEndpoint`. */
  static async start(criEndpoint: string): Promise<InterposedAgent> {
    const logPath = path.join(CLUSTER_DIR, 'logs', 'nodelet-interposed.log');
    await mkdir(path.dirname(logPath), { recursive: true });
    const log = await open(logPath, 'a');
    const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:16379';
    const args = [
      path.join(REPO_DIR, 'bin', 'nodelet.js'),
      ...['--kubeconfig', path.join(CLUSTER_DIR, 'kubeconfig-node')],
      ...['--node-name', NODE_NAME, '--node-ip', NODE_IP],
      ...['--cri-endpoint', criEndpoint],
      ...['--redis-url', redisUrl],
      ...['--root-dir', path.join(CLUSTER_DIR, 'nodelet-root'), '--pod-log-dir', '/var/log/pods'],
    ];
    try {
      await log.write(`\n==== ${new Date().toISOString()} node ${args.join(' ')}\n`);
      // bash closes inherited descriptors, then execs node in its place (same pid).
      const [command, wrapped] = withoutInheritedFds(process.execPath, args);
      const child = spawn(command, wrapped, {
        cwd: REPO_DIR,
        env: { ...process.env, CONTAINER_RUNTIME_ENDPOINT: criEndpoint },
        stdio: ['ignore', log.fd, log.fd],
      });
      await once(child, 'spawn');
      return new InterposedAgent(child, logPath);
    } finally {
      await log.close();
    }
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  /** The exit, once the process has exited. */
  get exitStatus(): AgentExit | undefined {
    return this.exit;
  }

  /** Sends `signal` (SIGKILL by default) and waits for the exit; at once when it has exited already. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<AgentExit> {
    if (this.exit !== undefined) return this.exit;
    this.child.kill(signal);
    const timeout = new Promise<never>((_, reject) => {
      setTimeout(() => {
        reject(new Error(`the interposed agent (pid ${this.pid}) did not exit within ${EXIT_TIMEOUT_MS} ms of ${signal}`));
      }, EXIT_TIMEOUT_MS).unref();
    });
    return Promise.race([this.exited, timeout]);
  }
}
