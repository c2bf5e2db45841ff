/**
 * The pod event dispatcher: built last, with every view its decision reads, it takes each event
 * off the bus, decides what it does (`decide.ts`) and does it to the reconcile queue (and, for a
 * pod added again under a UID the lifecycle kernel still knows, flags its restart there).
 * Enqueues are not awaited: a failure (Redis down) is logged, and the resync after Redis
 * reconnects repairs it.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { PodEvictions } from '../../reconcilers/lifecycle/evictions.js';
import type { PodLifecycle } from '../../reconcilers/lifecycle/pod-lifecycle.js';
import { nothingLeftToSync } from '../../reconcilers/lifecycle/removed-pods.js';
import { syncPreemptionReason } from '../../reconcilers/lifecycle/sync-preemption.js';
import { podEventReason, type PodEvent } from '../../reconcilers/model/pod-event.js';
import type { PodStore } from '../../reconcilers/pod/reconciler-deps.js';
import { podDisplayName, type PodKey } from '../../util/pod-key.js';
import type { ReconcileQueue } from '../queue/reconcile-queue.js';
import { decidePodEvent, type PodEventAction, type PodEventFacts } from './decide.js';

/** What the dispatcher reads and drives. */
export interface PodEventDispatcherOptions {
  readonly queue: Pick<ReconcileQueue, 'enqueue' | 'enqueueIfIdle' | 'resync' | 'preempt' | 'runInFlight'>;
  /** The desired pods of every source. */
  readonly store: Pick<PodStore, 'get' | 'synced'>;
  /** The lifecycle kernel's records, and where a pod's restart is flagged. */
  readonly lifecycle: Pick<PodLifecycle, 'get' | 'requestRestart'>;
  /** The pods the node decided to evict. */
  readonly evictions: Pick<PodEvictions, 'of'>;
  /** The status manager: whether an object holds the newest status it was handed. */
  readonly status: { holdsNewest(pod: V1Pod): boolean };
  readonly logger: Logger;
}

/** The facts of {@link decidePodEvent}, read from the agent's views. */
export function podEventFacts(options: Omit<PodEventDispatcherOptions, 'logger'>): PodEventFacts {
  const { queue, store, lifecycle, evictions, status } = options;
  return {
    nothingLeftToSync: (key) =>
      nothingLeftToSync({ record: lifecycle.get(key.uid), desired: store.get(key.uid), absenceTrusted: store.synced(key.uid), runInFlight: queue.runInFlight(key.uid) }),
    isOwnStatusEcho: (key) => {
      const pod = store.get(key.uid);
      return pod !== undefined && status.holdsNewest(pod);
    },
    mootSyncReason: (key) =>
      syncPreemptionReason({ record: lifecycle.get(key.uid), desired: store.get(key.uid), absenceTrusted: store.synced(key.uid), evicted: evictions.of(key.uid) !== undefined }),
    lifecyclePhase: (key) => lifecycle.get(key.uid)?.phase,
  };
}

export class PodEventDispatcher {
  private readonly facts: PodEventFacts;

  constructor(private readonly options: PodEventDispatcherOptions) {
    this.facts = podEventFacts(options);
  }

  /** Decides what `event` does and does it. Never throws. */
  dispatch(event: PodEvent): void {
    this.perform(event, decidePodEvent(event, this.facts));
  }

  private perform(event: PodEvent, decision: PodEventAction): void {
    const { key } = event;
    const reason = podEventReason(event);
    switch (decision.action) {
      case 'drop':
        return;
      case 'enqueue-if-idle':
        this.settle(key, reason, this.options.queue.enqueueIfIdle(key, reason));
        return;
      case 'preempt-and-enqueue':
        if (this.options.queue.preempt(key.uid, decision.why)) this.options.logger.info({ podUID: key.uid, pod: podDisplayName(key), why: decision.why }, "cancelled the pod's sync in flight");
        this.settle(key, reason, this.options.queue.enqueue(key, reason));
        return;
      case 'enqueue':
        this.settle(key, reason, this.options.queue.enqueue(key, reason));
        return;
      case 'request-restart':
        this.requestRestart(key, decision);
        this.settle(key, reason, this.options.queue.enqueue(key, reason));
        return;
      case 'resync':
        this.settle(key, reason, this.options.queue.resync(key, reason));
        return;
    }
  }

  /** Flags the restart (before the enqueue, so the run it asks for stops the pod) and cancels a sync in flight. */
  private requestRestart(key: PodKey, decision: { readonly why: string; readonly preempt: boolean }): void {
    const { lifecycle, queue, logger } = this.options;
    if (!lifecycle.requestRestart(key)) return;
    logger.info({ podUID: key.uid, pod: podDisplayName(key), why: decision.why }, 'pod restart requested: it stops, then starts afresh');
    if (decision.preempt && queue.preempt(key.uid, decision.why)) logger.info({ podUID: key.uid, pod: podDisplayName(key), why: decision.why }, "cancelled the pod's sync in flight");
  }

  private settle(key: PodKey, reason: string, added: Promise<void>): void {
    added.catch((error: unknown) => {
      this.options.logger.warn({ err: error, podUID: key.uid, reason }, 'enqueue failed; the next resync retries');
    });
  }
}
