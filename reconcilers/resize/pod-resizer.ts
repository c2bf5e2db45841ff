/**
 * In-place pod resize, one reconcile at a time (the kubelet's allocation manager, its resize
 * status and `doPodResizeAction`, v1.36). The reconciler calls, in order:
 *
 *   allocate(pod) ─► progress(allocated, observed) ─► plan(allocated, observed) ─► [executor] ─► actuate(...)
 *
 * - allocate: a pod seen for the first time is allocated as its spec says (admission). Later, a
 *   spec whose CPU or memory differs from the allocation is a resize: allocated when it fits
 *   (PodResizeInProgress set, `ResizeStarted`), else PodResizePending Deferred/Infeasible (a
 *   `ResizeDeferred`/`ResizeInfeasible` Warning once per reason and generation). The pod then
 *   runs as allocated: what the reconciler plans, starts and reports is the allocated pod.
 * - progress: before anything is actuated (as the kubelet's SyncPod checks it), PodResizeInProgress
 *   stays while a running container does not run as allocated, and is cleared (`ResizeCompleted`)
 *   once all do: so the API sees it during one status write and the next reconcile clears it.
 * - plan: the in-place updates and the containers to restart (RestartContainer policy).
 * - actuate: the in-place updates; a failure sets PodResizeInProgress/Error (`ResizeError`).
 *
 * A Deferred resize is tried again at every reconcile of its pod, and each pod leaving the node
 * (terminated, or forgotten: gone from the API without a termination here) requests a reconcile of
 * every pod with a Deferred resize.
 */
import type { V1Node, V1Pod, V1PodCondition } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { RuntimeService, StatsRuntime } from '../../cri/types.js';
import { podKeyOf, type PodKey } from '../../util/pod-key.js';
import type { EventRecorder } from '../events/event-recorder.js';
import type { PodLifecycleObserver } from '../lifecycle/observer.js';
import type { ObservedPod } from '../model/observed-pod.js';
import { actuateResize, isResizeActuationError, type PodCgroupResizer } from './actuate-resize.js';
import { decideAllocation } from './allocate-resize.js';
import { computeResizeActions, currentValues, isResizeInProgress, NO_RESIZE, type CurrentValuesOf, type ResizeActions } from './compute-resize-actions.js';
import { ResizeConditions } from './resize-conditions.js';
import { RESIZE_COMPLETED, RESIZE_DEFERRED, RESIZE_ERROR, RESIZE_INFEASIBLE, RESIZE_STARTED, resizeMessage } from './resize-events.js';
import type { PodResourceState } from './resource-state.js';
import type { PodEventSink } from '../model/pod-event.js';

export interface PodResizerOptions {
  readonly state: PodResourceState;
  readonly conditions: ResizeConditions;
  readonly events: EventRecorder;
  readonly runtime: RuntimeService;
  /** The registered Node object; undefined before registration (nothing is decided then). */
  readonly node: () => V1Node | undefined;
  /** The other pods holding node resources (admitted, not terminated), in any form: their allocation is applied here. */
  readonly admittedPods: () => readonly V1Pod[];
  /** Asks for a reconcile of a pod (a Deferred resize may fit once a pod left). */
  /** Told when a deferred resize may fit now (another pod left the node). */
  readonly podEvents: PodEventSink;
  /** Container memory usage for the memory-decrease check. */
  readonly stats?: StatsRuntime;
  /** The pod cgroup step (absent with `--cgroups-per-qos=false`; see actuate-resize.ts). */
  readonly podCgroups?: PodCgroupResizer;
  readonly logger: Logger;
}

const generationOf = (pod: V1Pod): number => pod.metadata?.generation ?? 0;
const uidOf = (pod: V1Pod): string => pod.metadata?.uid ?? '';

export class PodResizer implements PodLifecycleObserver {
  /** Keys of pods whose resize was Deferred, to reconcile when room frees up. */
  private readonly deferredKeys = new Map<string, PodKey>();

  constructor(private readonly options: PodResizerOptions) {}

  /** The pod with its containers' resources as allocated (the pod itself before its first allocation). */
  allocatedPod(pod: V1Pod): V1Pod {
    return this.options.state.allocatedPod(pod);
  }

  /** Records a new pod's allocation, or decides a resize; returns the pod as allocated. See the header. */
  allocate(pod: V1Pod): V1Pod {
    const { state, conditions, events } = this.options;
    const uid = uidOf(pod);
    conditions.backfill(pod);
    if (!state.hasAllocation(uid)) {
      state.setAllocated(pod);
      return pod;
    }
    const allocated = state.allocatedPod(pod);
    const node = this.options.node();
    if (node === undefined) return allocated;
    const others = this.options.admittedPods().filter((p) => uidOf(p) !== uid).map((p) => state.allocatedPod(p));
    const decision = decideAllocation({ desired: pod, allocated, allocatedPodResources: state.allocatedPodResources(uid), node, others });
    const generation = generationOf(pod);
    switch (decision.kind) {
      case 'unchanged':
        conditions.clearPending(uid);
        this.deferredKeys.delete(uid);
        return allocated;
      case 'allocate':
        state.setAllocated(pod);
        conditions.clearPending(uid);
        this.deferredKeys.delete(uid);
        conditions.clearInProgress(uid);
        conditions.setInProgress(uid, generation);
        events.record(pod, { type: 'Normal', reason: RESIZE_STARTED, message: resizeMessage(pod, generation, 'Pod resize started') });
        this.options.logger.info({ podUID: uid, generation }, 'pod resize allocated');
        return state.allocatedPod(pod);
      case 'pending':
        if (decision.reason === 'Deferred') this.deferredKeys.set(uid, podKeyOf(pod));
        else this.deferredKeys.delete(uid);
        if (conditions.setPending(uid, decision.reason, decision.message, generation)) {
          const reason = decision.reason === 'Infeasible' ? RESIZE_INFEASIBLE : RESIZE_DEFERRED;
          events.record(pod, { type: 'Warning', reason, message: resizeMessage(pod, generation, `Pod resize ${decision.reason}`, decision.message) });
        }
        return allocated;
    }
  }

  /** Sets or clears PodResizeInProgress from what runs now (before actuating). */
  progress(allocated: V1Pod, observed: ObservedPod): void {
    const uid = uidOf(allocated);
    this.options.state.retainContainers(uid, new Set(observed.containers.map((c) => c.id)));
    if (isResizeInProgress(allocated, observed, this.currentOf(uid))) {
      this.options.conditions.setInProgress(uid, generationOf(allocated));
      return;
    }
    const generation = this.options.conditions.clearInProgress(uid);
    if (generation !== undefined) {
      this.options.events.record(allocated, { type: 'Normal', reason: RESIZE_COMPLETED, message: resizeMessage(allocated, generation, 'Pod resize completed') });
    }
  }

  /** The in-place updates and resize restarts of the allocated pod. */
  plan(allocated: V1Pod, observed: ObservedPod): ResizeActions {
    if (!this.options.state.hasAllocation(uidOf(allocated))) return NO_RESIZE;
    return computeResizeActions(allocated, observed, this.currentOf(uidOf(allocated)));
  }

  /** Applies the in-place updates; true when any was asked for. A failure is reported as PodResizeInProgress/Error. */
  async actuate(allocated: V1Pod, actions: ResizeActions, signal?: AbortSignal): Promise<boolean> {
    if (actions.memory.length === 0 && actions.cpu.length === 0) return false;
    const { runtime, state, stats, podCgroups } = this.options;
    try {
      await actuateResize({ pod: allocated, actions, runtime, state, ...(stats === undefined ? {} : { stats }), ...(podCgroups === undefined ? {} : { podCgroups }), ...(signal === undefined ? {} : { signal }) });
    } catch (error) {
      if (!isResizeActuationError(error)) throw error;
      this.reportError(allocated, error.message);
    }
    return true;
  }

  /** The pod's resize conditions, for its status. */
  conditionsOf(uid: string): V1PodCondition[] {
    return this.options.conditions.conditionsOf(uid);
  }

  /** What each running container runs with now (its last in-place update, else its creation annotation). */
  currentOf(uid: string): CurrentValuesOf {
    return (c) => currentValues(c, this.options.state.actuated(uid, c.id));
  }

  /** A pod stopped running: its resources may make room for a Deferred resize. */
  podTerminated(key: PodKey): void {
    this.retryDeferred(key);
  }

  /** A pod is gone (also one deleted without terminating here first, e.g. with a zero grace period). */
  podForgotten(key: PodKey): void {
    this.deferredKeys.delete(key.uid);
    this.retryDeferred(key);
    this.options.conditions.podForgotten(key);
    this.options.state.podForgotten(key);
  }

  private retryDeferred(leaving: PodKey): void {
    for (const [uid, deferred] of this.deferredKeys) {
      if (uid !== leaving.uid) this.options.podEvents.emit({ kind: 'resize-retry', key: deferred });
    }
  }

  private reportError(pod: V1Pod, message: string): void {
    const uid = uidOf(pod);
    const { generation, changed } = this.options.conditions.setInProgress(uid, generationOf(pod), { reason: 'Error', message });
    this.options.logger.warn({ podUID: uid, message }, 'pod resize failed');
    if (changed) this.options.events.record(pod, { type: 'Warning', reason: RESIZE_ERROR, message: resizeMessage(pod, generation, 'Pod resize error', message) });
  }
}
