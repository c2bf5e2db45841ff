/**
 * The pod source: every pod bound to this node (an informer on `spec.nodeName=<node>` across all
 * namespaces), kept in a UID-keyed index, each change handed to `onPod` as a UID and a reason.
 * Handlers do nothing else; the reconciler reads the pod from `get(uid)` and decides.
 *
 * Supervision, because client-node's informer stops for good on most errors:
 *   - after an `error`, the informer is replaced by a fresh one (full relist) after a capped
 *     exponential backoff (1 s → 30 s; the count resets once a sync has held for the cap), each
 *     delay spread over [d, 2d) as client-go's reflector spreads its own (`wait.Jitter` 1.0): when
 *     the API server restarts, every agent's watch breaks in the same second, and without the
 *     spread the whole fleet would relist in step at 1 s, 3 s, 7 s …;
 *   - if the watch shows no sign of life (no accepted watch, event or bookmark) for
 *     `silenceTimeoutMs`, it is replaced the same way;
 *   - every relist, including the informer's own after 410 Gone, is level-triggered: `onPod` for
 *     every listed pod, and for every UID the index held that the list no longer has, so deletions
 *     missed during an outage still reach the reconciler.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from '../../kube/client.js';
import type { Logger } from 'pino';
import type { BackoffPolicy } from '../../util/backoff.js';
import { systemClock, type Clock } from '../../util/clock.js';
import { createPodIndex } from './pod-index.js';
import { DeletionGraceMemory } from './deletion-grace.js';
import type { PodKey } from '../../util/pod-key.js';
import type { DesiredPodSource } from './pod-store.js';
import { createInformerSupervisor, createSupervisorState } from './informer-supervisor.js';
import { createPodTransport, type PodTransport } from './pod-watch.js';
import { readinessNeedsReconcile } from '../../reconcilers/status/pod-conditions.js';
import { isEvictedStatus } from '../../reconcilers/admission/index.js';
import type { PodEvent, PodEventSink, SourceChange } from '../../reconcilers/model/pod-event.js';

export { isStaleInformerError, StaleInformerError } from './informer-supervisor.js';

/**
 * The event of an update that changed only the pod's status, with the two facts about it that make
 * it more than another writer's status (`controllers/pod-events/decide.ts`): the pod's Ready
 * condition disagrees with its readiness gates (another writer set a gate's condition; the
 * kubelet's `NeedToReconcilePodReadiness`), or the status shows the pod evicted (the kubelet's
 * `HandlePodReconcile` then removes its dead containers).
 */
function statusUpdated(ref: PodKey, pod: V1Pod): PodEvent {
  return { kind: 'status-updated', key: ref, readinessGatesDisagree: readinessNeedsReconcile(pod), evicted: isEvictedStatus(pod.status) };
}

/** Options of {@link createPodSource}. */
export interface PodSourceOptions {
  readonly kube: KubeClient;
  readonly nodeName: string;
  readonly logger: Logger;
  /** Where every change of the node's pods is told. */
  readonly podEvents: PodEventSink;
  readonly clock?: Clock;
  /** Restart delay after informer errors; default 1 s doubling to 30 s, jittered by 1.0. */
  readonly backoff?: BackoffPolicy;
  /** A number in [0, 1) for the backoff's jitter; default Math.random. */
  readonly random?: () => number;
  /** Replace a watch silent for this long; default 3 minutes. */
  readonly silenceTimeoutMs?: number;
  /** Test seam; defaults to the API server behind `kube`. */
  readonly transport?: PodTransport;
}

/**
 * The node's pods in the API: one source of the desired-pod store. Beyond the source contract, the
 * store's `healthy()` here means the informer runs, has synced since its last error, and the watch
 * is not silent; `stop()` keeps the index's last contents.
 */
export interface PodSource extends DesiredPodSource {
  readonly name: 'api';
  /** Calls `onPod` for every known pod (periodic safety net, or after the queue lost its state). */
  resyncAll(): void;
}

const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 1000, maxMs: 30_000, jitter: 1 };
const DEFAULT_SILENCE_TIMEOUT_MS = 3 * 60_000;

/** Creates the pod source; nothing is watched until `start()`. */
export function createPodSource(options: PodSourceOptions): PodSource {
  const clock = options.clock ?? systemClock;
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  const silenceTimeoutMs = options.silenceTimeoutMs ?? DEFAULT_SILENCE_TIMEOUT_MS;
  const logger = options.logger.child({ component: 'pod-source' });
  const transport = options.transport ?? createPodTransport(options.kube, options.nodeName);
  const index = createPodIndex();
  const deletionGraces = new DeletionGraceMemory();
  const state = createSupervisorState(clock);

  function emit(event: PodEvent): void {
    try {
      options.podEvents.emit(event);
    } catch (err: unknown) {
      logger.error({ err, podUID: event.key.uid, kind: event.kind }, 'the pod event sink threw');
    }
  }

  function notify(ref: PodKey, change: SourceChange): void {
    emit({ kind: 'source-changed', key: ref, source: 'api', change });
  }

  function applyList(items: readonly V1Pod[]): void {
    for (const ref of index.replaceAll(items)) notify(ref, 'vanished');
    for (const ref of index.refs()) notify(ref, 'relisted');
    state.markSynced();
    logger.debug({ pods: items.length }, 'pods relisted');
  }

  function applyUpsert(pod: V1Pod): void {
    const outcome = index.upsert(pod);
    if (!outcome) return;
    if (outcome.replaced) notify(outcome.replaced, 'vanished');
    if (outcome.kind === 'unchanged') return;
    if (outcome.kind === 'status-updated') emit(statusUpdated(outcome.ref, pod));
    else notify(outcome.ref, outcome.kind);
  }

  function applyDelete(pod: V1Pod): void {
    deletionGraces.record(pod);
    // A UID the index no longer holds was already reported (as vanished by a relist).
    const ref = index.remove(pod);
    if (ref) notify(ref, 'deleted');
  }

  const supervisor = createInformerSupervisor({
    transport,
    logger,
    clock,
    backoff,
    random: options.random ?? Math.random,
    silenceTimeoutMs,
    state,
    handlers: { applyList, applyUpsert, applyDelete },
  });

  return {
    name: 'api',
    start: () => supervisor.start(),
    stop: () => {
      supervisor.stop();
    },
    get: (uid) => index.get(uid),
    // The API server itself: absent when it answers NotFound or has another pod under the name.
    confirmAbsent: async (key) => {
      try {
        // Only the UID is known (an orphaned pod directory): the node's pods are listed instead.
        if (key.name === '') return !(await transport.list()).items.some((pod) => pod.metadata?.uid === key.uid);
        const pod = await transport.get(key.namespace, key.name);
        return pod === undefined || pod.metadata?.uid !== key.uid;
      } catch (err: unknown) {
        logger.debug({ err, podUID: key.uid }, 'could not ask the API server whether the pod is gone');
        return false;
      }
    },
    list: () => index.list(),
    finalDeletionGraceSeconds: (uid) => deletionGraces.of(uid),
    synced: () => state.everSynced,
    healthy: () => supervisor.healthy(),
    resyncAll(): void {
      for (const ref of index.refs()) emit({ kind: 'resync', key: ref });
    },
  };
}
