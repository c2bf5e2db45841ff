/**
 * The benchmark's side of the latency probe (`redis-probe.ts`): starts it as a child process with
 * an IPC channel, and turns its replies into promises.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import type { ClusterSettings } from '../controllers/queue/redis-cluster.js';
import type { ProbeCommand, ProbeReply } from './redis-probe.js';

/** What one window of the probe measured. */
export type ProbeWindow = Extract<ProbeReply, { kind: 'window' }>;

/** A running probe process. */
export class ProbeProcess {
  private readonly waiting: ((reply: ProbeReply) => void)[] = [];

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (reply: ProbeReply) => {
      this.waiting.shift()?.(reply);
    });
  }

  /** Starts the probe's agents (`names`, at the given resync phases); resolves once their first pods ran. */
  static async start(settings: { redisUrl: string; cluster: ClusterSettings | undefined; names: readonly string[]; podsPerNode: number; phases: readonly number[] }): Promise<ProbeProcess> {
    const child = fork(path.join(import.meta.dirname, 'redis-probe.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const probe = new ProbeProcess(child);
    const { cluster, ...rest } = settings;
    await probe.ask({ kind: 'start', ...rest, ...(cluster === undefined ? {} : { cluster }) }, 'started');
    return probe;
  }

  private ask<K extends ProbeReply['kind']>(command: ProbeCommand, expected: K): Promise<Extract<ProbeReply, { kind: K }>> {
    return new Promise((resolve, reject) => {
      this.waiting.push((reply) => {
        if (reply.kind === expected) resolve(reply as Extract<ProbeReply, { kind: K }>);
        else reject(new Error(`the latency probe answered ${reply.kind}${reply.kind === 'failed' ? `: ${reply.message}` : ''} to ${command.kind}`));
      });
      this.child.send(command);
    });
  }

  /** Starts a window: the probe's own churn when `churn`, and `burstPods` new pods per agent. */
  windowStart(churn: boolean, burstPods: number): void {
    this.child.send({ kind: 'window-start', churn, burstPods } satisfies ProbeCommand);
  }

  windowEnd(): Promise<ProbeWindow> {
    return this.ask({ kind: 'window-end' }, 'window');
  }

  async close(): Promise<void> {
    const exited = once(this.child, 'exit');
    await this.ask({ kind: 'close' }, 'closed');
    await exited;
  }
}
