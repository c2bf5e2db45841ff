/**
 * What the pod reconciler's runs are built from (`pod-reconciler.ts` and the three kinds of run it
 * dispatches to: `sync-pod.ts`, `terminate-pod.ts`, `pod-cleanups.ts`), below all of them.
 */
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { RuntimeService } from '../../cri/types.js';
import type { Clock } from '../../util/clock.js';
import type { PodKey } from '../../util/pod-key.js';
import type { PodAdmitter } from '../admission/index.js';
import type { EventRecorder } from '../events/event-recorder.js';
import type { PodEvictions } from '../lifecycle/evictions.js';
import type { PodLifecycle } from '../lifecycle/pod-lifecycle.js';
import type { StaticPodNames } from '../lifecycle/static-pod-names.js';
import type { RuntimeSightingsWriter } from '../model/runtime-sightings.js';
import type { ProbeFailures } from '../probes/probe-failures.js';
import type { PodResizer } from '../resize/pod-resizer.js';
import type { PodActionsExecutor } from '../runtime/execute-pod-actions.js';
import type { ContainerStartFailures } from '../runtime/start-failures.js';
import type { ContainerResultsReader } from '../probes/container-readiness.js';
import type { StatusWriter } from '../status/status-manager.js';
import type { VolumeManager } from '../volumes/index.js';

/** Where the reconciler reads desired pods: the merged store of every pod source. */
export interface PodStore {
  /** The newest desired object of a pod, from whichever source has it; undefined when none has. */
  get(uid: string): V1Pod | undefined;
  /**
   * True once every source has delivered a full list. Before that, a UID missing from the store
   * proves nothing (the agent just started, or the API server is down), so nothing is torn down.
   * With a UID: whether that UID's absence can be trusted, which needs only the source that last
   * had it to be synced (a pod removed from its source is gone whatever the others do); a UID no
   * source was seen having still needs every source (orphan cleanup).
   */
  synced(uid?: string): boolean;
  /**
   * Asks every source's origin whether the pod is really gone (a cache can lag behind a fresh
   * list); false when any still has it or cannot answer. Asked before anything that still exists
   * in the runtime is torn down.
   */
  confirmGone(key: PodKey): Promise<boolean>;
  /**
   * The deletion grace period the pod's final object carried when its source removed it, if
   * known. A force deletion writes grace 0 just before it removes the pod: a reconcile that sees
   * only the absence still stops the pod with it (the kubelet handles the removal with that
   * final object). Absent or undefined: not known.
   */
  finalDeletionGraceSeconds?(uid: string): number | undefined;
}

/**
 * Asked before the first sandbox of a pod is created: may new pods start now? Pods that already
 * have a sandbox are never held (their containers keep restarting), nor are deletions.
 */
export interface PodAdmission {
  /** True while new pods must not start (the NodeAgent's `spec.paused`). */
  isPaused(): boolean;
}

/** The kubelet's pod worker counters the reconciler feeds; none may throw. */
export interface PodFlowCounters {
  /** A pod found in the runtime that no pod source and no earlier run knew (`kubelet_orphaned_runtime_pods_total`). */
  orphanFound(): void;
  /** A pod admitted for the first time (`kubelet_containers_per_pod_count`, `kubelet_pod_level_resources_admission_total`). */
  podAdmitted(pod: V1Pod): void;
  /** A pod forgotten to run afresh under the same UID, static or not (`kubelet_restarted_pods_total`). */
  podRestarted(isStatic: boolean): void;
}

export interface PodReconcilerOptions {
  /** Orphans found, pods first admitted and pods restarted; absent: not counted. */
  readonly podFlows?: PodFlowCounters;
  /** Whether a runtime handler makes read-only mounts recursive (containerStatuses[].volumeMounts); absent: not known. */
  readonly recursiveReadOnlyOf?: (handler: string) => boolean | undefined;
  readonly store: PodStore;
  readonly runtime: RuntimeService;
  readonly executor: PodActionsExecutor;
  readonly status: StatusWriter;
  readonly volumes: VolumeManager;
  readonly events: EventRecorder;
  /** The per-UID lifecycle; the reconciler moves it forward, the managers registered on it follow. */
  readonly lifecycle: PodLifecycle;
  /** Why containers could not start (a per-pod manager registered on the lifecycle). */
  readonly startFailures: ContainerStartFailures;
  readonly nodeName: string;
  readonly nodeIp: string;
  /** e.g. `containerd`, from the runtime's version. */
  readonly runtimeName: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Holds new pods while paused; absent means never paused. */
  readonly admission?: PodAdmission;
  /** The node's admit handlers and the rejections they decided (a per-pod manager). */
  readonly admitter: PodAdmitter;
  /** Probe results the status reports (the status manager's store). */
  readonly probeResults: ContainerResultsReader;
  /** Liveness and startup failures the probers recorded: their containers are killed. */
  readonly probeFailures: ProbeFailures;
  /** Pods the node decided to stop (eviction under pressure): killed with their grace, reported Failed. */
  readonly evictions?: PodEvictions;
  /** In-place resize: allocation, actuation and its conditions; resources are never resized when absent. */
  readonly resizer?: PodResizer;
  /** When the agent (its prober) started: containers running before it keep a Ready pod's readiness until probed. */
  readonly agentStartedAtMs?: number;
  /** Told the runtime state each run reported, so PLEG drops the echo of the run's own work; absent: not told. */
  readonly sightings?: RuntimeSightingsWriter;
  /**
   * Which static pod holds each full name: a static pod starts only once no other of its name
   * runs or stops (an edited manifest's pod waits out its predecessor's grace period). Absent: no
   * static pod sources, nothing waits.
   */
  readonly staticPodNames?: Pick<StaticPodNames, 'tryStart'>;
  /**
   * The last status handed to the status manager for a pod (the kubelet's status manager cache),
   * newer than the API's until its write lands: what tells a run that the pod is restarting all
   * its containers in place, and what its removed containers showed. Absent, or undefined for a
   * pod: the API's status.
   */
  readonly heldStatus?: (uid: string) => V1PodStatus | undefined;
  /**
   * The pod log root (`/var/log/pods`): a container the runtime has no instance of starts with the
   * restart count its log directory gives. Absent: such a container starts at 0.
   */
  readonly podLogDir?: string;
}

