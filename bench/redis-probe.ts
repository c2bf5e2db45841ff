/**
 * The latency probe of the Redis load benchmark (`redis-load.ts`): a few simulated agents
 * (`redis-sim-node.ts`, nodelet's real queue) in a process of their own, as each agent has its own
 * process in a fleet, while the rest of the fleet shares the generator's one thread. Their enqueue →
 * run latency is what an agent sees of a loaded Redis; the generator's includes its own event-loop
 * delay (thousands of agents on one thread), which no agent has.
 *
 * Run by the benchmark as a child process with an IPC channel; the parent sends {@link ProbeCommand}s
 * and reads {@link ProbeReply}s. In every window the probe's agents each create and delete one pod
 * per second (their own churn, so that a window holds enough events for a p99), besides what the
 * parent asks of them.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClusterSettings } from '../controllers/queue/redis-cluster.js';
import { burstDrain, Counters, SimNode } from './redis-sim-node.js';
import { inPool } from './stats.js';

/** What the parent asks. */
export type ProbeCommand =
  | { readonly kind: 'start'; readonly redisUrl: string; readonly cluster?: ClusterSettings; readonly names: readonly string[]; readonly podsPerNode: number; readonly phases: readonly number[] }
  | { readonly kind: 'window-start'; readonly churn: boolean; readonly burstPods: number }
  | { readonly kind: 'window-end' }
  | { readonly kind: 'close' };

/** What the probe answers. */
export type ProbeReply =
  | { readonly kind: 'started' }
  | { readonly kind: 'window'; readonly latenciesMs: readonly number[]; readonly loopDelayP99Ms: number; readonly burstDrainMs?: number; readonly burstOutstanding?: number }
  | { readonly kind: 'closed' }
  | { readonly kind: 'failed'; readonly message: string };

const counters = new Counters();
let nodes: SimNode[] = [];
let churn: NodeJS.Timeout[] = [];
let window: { latency0: number; startedAt: number; loopDelay: ReturnType<typeof monitorEventLoopDelay>; burst: boolean } | undefined;

function reply(message: ProbeReply): void {
  process.send?.(message);
}

async function start(command: Extract<ProbeCommand, { kind: 'start' }>): Promise<void> {
  nodes = command.names.map((name) => new SimNode(name, command.redisUrl, counters, command.cluster));
  await inPool(nodes, 10, (n) => n.start(command.podsPerNode, command.phases[nodes.indexOf(n)] ?? 0));
  while (counters.outstandingEvents > 0) await sleep(200);
  reply({ kind: 'started' });
}

function windowStart(command: Extract<ProbeCommand, { kind: 'window-start' }>): void {
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  window = { latency0: counters.latenciesMs.length, startedAt: performance.now(), loopDelay, burst: command.burstPods > 0 };
  // Each agent's pod changes at its own point of the second, as independent nodes' would.
  if (command.churn) {
    nodes.forEach((n, i) => {
      churn.push(setTimeout(() => {
        churn.push(setInterval(() => { n.addPod(); n.deletePod(); }, 1_000));
      }, (i * 1_000) / nodes.length));
    });
  }
  for (const n of nodes) for (let i = 0; i < command.burstPods; i += 1) n.addPod(true);
}

function stopChurn(): void {
  for (const timer of churn) clearTimeout(timer);
  churn = [];
}

function windowEnd(): void {
  stopChurn();
  if (window === undefined) throw new Error('window-end without window-start');
  window.loopDelay.disable();
  const drain = window.burst ? burstDrain(counters, window.startedAt) : {};
  reply({ kind: 'window', latenciesMs: counters.latenciesMs.slice(window.latency0), loopDelayP99Ms: window.loopDelay.percentile(99) / 1e6, ...drain });
  window = undefined;
}

async function close(): Promise<void> {
  stopChurn();
  await inPool(nodes, 10, (n) => n.close());
  reply({ kind: 'closed' });
  process.disconnect?.();
}

process.on('message', (message: ProbeCommand) => {
  const run = async (): Promise<void> => {
    if (message.kind === 'start') await start(message);
    else if (message.kind === 'window-start') windowStart(message);
    else if (message.kind === 'window-end') windowEnd();
    else await close();
  };
  run().catch((err: unknown) => { reply({ kind: 'failed', message: err instanceof Error ? err.message : String(err) }); });
});
