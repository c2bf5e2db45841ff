/**
 * One simulated node agent of a fleet-sized fault test: nodelet's real reconcile queue with the
 * agent's options and wiring, reconciling an in-memory node instead of a runtime, so a thousand of
 * them fit in one process and their state can be checked exactly.
 *
 * Wired as the agent wires its queue (`cmd/assembly/queue.ts`, `controllers/pod-events/`):
 * - a pod event enqueues its UID; a failed enqueue is dropped, as the dispatcher logs and drops it
 *   (the resync covers it);
 * - the queue's own resync (`onResync`: Redis reconnected, or lost the queue) resyncs every pod the
 *   agent knows, a deleted pod still in its "runtime" included, as `store.resyncAll()` and the
 *   PLEG relist do;
 * - the periodic resync (every 60 s, at a per-agent phase) and the NodeAgent health sample
 *   (`sampleCounts` every 2 s, which notices a flushed queue) run as in the agent.
 *
 * The reconcile is level-triggered: it reads the pod's latest desired generation (or its deletion)
 * and makes the node's "runtime" match. Converged = every live pod's runtime generation is its
 * desired one, and no deleted pod is left in the runtime.
 */
import type { Logger } from 'pino';
import { createReconcileQueue, type ReconcileQueue } from '../../controllers/queue/reconcile-queue.js';
import type { ClusterSettings } from '../../controllers/queue/redis-cluster.js';
import type { PodKey } from '../../util/pod-key.js';
import type { ReconcileResult } from '../../util/reconcile.js';
import { startAgentRhythm } from '../../bench/redis-sim-node.js';

interface DesiredPod {
  readonly key: PodKey;
  generation: number;
  deleted: boolean;
}

/** A fleet agent's counts, for the test's figures. */
export interface FleetAgentCounts {
  readonly runs: number;
  readonly failedEnqueues: number;
  readonly unconverged: number;
}

export class FleetAgent {
  readonly queue: ReconcileQueue;
  private readonly desired = new Map<string, DesiredPod>();
  /** The node's "runtime": per UID, the generation its containers run. */
  private readonly runtime = new Map<string, number>();
  private readonly timers: NodeJS.Timeout[] = [];
  private serial = 0;
  private runs = 0;
  private failedEnqueues = 0;
  /** Failed enqueues by error message, over every agent (what refused them). */
  static readonly failures = new Map<string, number>();

  constructor(
    readonly name: string,
    cluster: ClusterSettings,
    logger: Logger,
  ) {
    this.queue = createReconcileQueue({
      redisUrl: 'redis://ignored',
      cluster,
      nodeName: name,
      concurrency: 4,
      logger,
      shutdownTimeoutMs: 2_000,
      redisStepTimeoutMs: 2_000,
    });
    this.queue.onResync(() => {
      this.resyncAll();
    });
  }

  /** Starts the queue's worker, then the health sample and the periodic resync at `phase` ∈ [0, 1) of the period. */
  async start(phase: number): Promise<void> {
    await this.queue.start({ reconcile: (ref) => Promise.resolve(this.reconcile(ref)) });
    startAgentRhythm(this.queue, phase, () => { this.resyncAll(); }, this.timers);
  }

  private reconcile(ref: PodKey): ReconcileResult {
    this.runs += 1;
    const pod = this.desired.get(ref.uid);
    if (pod === undefined) return {};
    if (pod.deleted) {
      this.runtime.delete(ref.uid);
      this.desired.delete(ref.uid);
    } else {
      this.runtime.set(ref.uid, pod.generation);
    }
    return {};
  }

  private failed(err: unknown): void {
    this.failedEnqueues += 1;
    const message = err instanceof Error ? err.message.slice(0, 80) : String(err);
    FleetAgent.failures.set(message, (FleetAgent.failures.get(message) ?? 0) + 1);
  }

  private event(pod: DesiredPod, reason: string): void {
    this.queue.enqueue(pod.key, reason).catch((err: unknown) => { this.failed(err); });
  }

  private resyncAll(): void {
    for (const pod of this.desired.values()) this.queue.resync(pod.key, 'resync').catch((err: unknown) => { this.failed(err); });
  }

  /** A new pod bound to this node. */
  createPod(): void {
    this.serial += 1;
    const uid = `${this.name}-pod-${this.serial}`;
    const pod: DesiredPod = { key: { uid, namespace: 'fleet', name: uid }, generation: 1, deleted: false };
    this.desired.set(uid, pod);
    this.event(pod, 'pod added');
  }

  /** The newest live pod's spec changes (a new generation to run). */
  updatePod(): void {
    const pod = [...this.desired.values()].reverse().find((p) => !p.deleted);
    if (pod === undefined) return;
    pod.generation += 1;
    this.event(pod, 'pod updated');
  }

  /** The oldest live pod is deleted. */
  deletePod(): void {
    const pod = [...this.desired.values()].find((p) => !p.deleted);
    if (pod === undefined) return;
    pod.deleted = true;
    this.event(pod, 'pod deleted');
  }

  /** Pods whose runtime state differs from the desired one. */
  unconverged(): number {
    let n = 0;
    for (const [uid, pod] of this.desired) if (pod.deleted || this.runtime.get(uid) !== pod.generation) n += 1;
    return n;
  }

  counts(): FleetAgentCounts {
    return { runs: this.runs, failedEnqueues: this.failedEnqueues, unconverged: this.unconverged() };
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    await this.queue.close();
  }
}
