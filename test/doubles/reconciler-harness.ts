/**
 * The per-pod machinery as the agent assembles it (`assemblePodSync`, the same function
 * `cmd/assemble-agent.ts` calls), wired to the recording fake runtime, a map as the pod store, a
 * recording status writer and a temporary root directory: the component-test bed of the
 * reconciler tests. Not used by production code.
 */
import type { RuntimeSightingsWriter } from '../../reconcilers/model/runtime-sightings.js';
import type { StaticPodNames } from '../../reconcilers/lifecycle/static-pod-names.js';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Node, V1Pod, V1PodStatus, V1Service } from '@kubernetes/client-node';
import { pino } from 'pino';
import { FakeRuntime } from './fake-runtime.js';
import { createFakeClock, type FakeClock } from './fake-clock.js';
import { RecordingEventRecorder } from './recording-event-recorder.js';
import type { PodReconciler } from '../../reconcilers/pod/pod-reconciler.js';
import type { PodStore } from '../../reconcilers/pod/reconciler-deps.js';
import type { PodStartMetrics } from '../../reconcilers/status/pod-start-tracker.js';
import { assemblePodSync, localNodeObject, type PodCgroupSettings, type PodSecuritySettings, type PodSync, type PodSyncNode, type PodSyncDeps } from '../../reconcilers/pod/pod-sync.js';
import type { PodDnsSettings } from '../../reconcilers/dns/pod-dns-configurer.js';
import { applyProbeResults } from '../../reconcilers/status/probe-status.js';
import { ContainerReadinessStore, type ContainerProbeResult } from '../../reconcilers/probes/container-readiness.js';
import type { PodKey } from '../../util/pod-key.js';
import type { StatusWriter } from '../../reconcilers/status/status-manager.js';
import { UID } from './pod-fixtures.js';
import { createVolumeManager, type VolumeSourceApi } from '../../reconcilers/volumes/index.js';
import { RuntimeClassNotFoundError } from '../../reconcilers/container/runtime-handlers.js';
import { podEventsTo } from './pod-events.js';

/**
 * Records every status and deletion, keeps the store's pod in step like the informer would, and
 * applies probe results as the real status manager does (full statuses and the narrow entry point).
 */
export class RecordingStatusWriter implements StatusWriter {
  readonly statuses: V1PodStatus[] = [];
  readonly deleted: string[] = [];
  /** How often the lifecycle told this writer to forget a pod. */
  forgotten = 0;
  private readonly latest = new Map<string, V1PodStatus>();
  constructor(
    private readonly store: Map<string, V1Pod>,
    private readonly readiness: ContainerReadinessStore,
    private readonly clock: FakeClock,
  ) {}
  setPodStatus(pod: V1Pod, status: V1PodStatus): void {
    const uid = pod.metadata?.uid ?? '';
    this.record(pod, applyProbeResults(pod, status, this.readiness.resultsOf(uid), new Date(this.clock.now())));
  }
  setContainerReadiness(key: PodKey, containerId: string, ready: boolean): Promise<void> {
    return this.setResult(key, containerId, { ready });
  }
  setContainerStartup(key: PodKey, containerId: string, started: boolean): Promise<void> {
    return this.setResult(key, containerId, { started });
  }
  podStatus(uid: string): V1PodStatus | undefined {
    return this.latest.get(uid);
  }
  deletePod(pod: V1Pod): Promise<boolean> {
    this.deleted.push(pod.metadata?.uid ?? '');
    this.store.delete(pod.metadata?.uid ?? '');
    return Promise.resolve(true);
  }
  forget(): void {
    // Nothing cached per UID here: every status is recorded.
  }
  podForgotten(): void {
    this.forgotten++;
  }
  last(): V1PodStatus | undefined {
    return this.statuses.at(-1);
  }
  private setResult(key: PodKey, containerId: string, result: ContainerProbeResult): Promise<void> {
    this.readiness.record(key.uid, containerId, result);
    const pod = this.store.get(key.uid);
    const held = this.latest.get(key.uid);
    if (pod === undefined || held === undefined) return Promise.resolve();
    const updated = applyProbeResults(pod, held, this.readiness.resultsOf(key.uid), new Date(this.clock.now()));
    if (updated !== held) this.record(pod, updated);
    return Promise.resolve();
  }
  private record(pod: V1Pod, status: V1PodStatus): void {
    const uid = pod.metadata?.uid ?? '';
    this.statuses.push(status);
    this.latest.set(uid, status);
    this.store.set(uid, { ...pod, status });
  }
}

const noApi: VolumeSourceApi = {
  readConfigMap: () => Promise.resolve(undefined),
  readSecret: () => Promise.resolve(undefined),
  readPersistentVolumeClaim: () => Promise.resolve(undefined),
  readPersistentVolume: () => Promise.resolve(undefined),
  requestServiceAccountToken: () => Promise.reject(new Error('no tokens in this test')),
  readClusterTrustBundle: () => Promise.resolve(undefined),
  listClusterTrustBundles: () => Promise.resolve([]),
};

export interface ReconcilerHarness {
  readonly root: string;
  readonly runtime: FakeRuntime;
  readonly store: Map<string, V1Pod>;
  readonly status: RecordingStatusWriter;
  readonly events: RecordingEventRecorder;
  readonly clock: FakeClock;
  /** What the store answers to `synced()`. */
  readonly synced: { value: boolean };
  /** What the admission seam answers to `isPaused()`. */
  readonly paused: { value: boolean };
  /** The Node object admission reads (undefined: not registered yet); `localNodeObject` of the node at first. */
  readonly nodeObject: { value: V1Node | undefined };
  /** The services the node's service lister holds, and whether it has synced (true at first). */
  readonly services: { synced: boolean; items: V1Service[] };
  /** The cluster's RuntimeClasses, name to handler (none at first). */
  readonly runtimeClasses: Map<string, string>;
  /** The agent's reconciler (the same one across calls, with its backoffs and lifecycle). */
  reconciler(): PodReconciler;
  /** The assembled per-pod machinery of the current agent. */
  sync(): PodSync;
  /** UIDs the store's cache lacks but its origin still has (a lagging pod source). */
  readonly stillInOrigin: Set<string>;
  /** The deletion grace period of removed pods' final objects, as the API source remembers it (`finalDeletionGraceSeconds`). */
  readonly finalDeletionGraces: Map<string, number>;
  /** Every reconcile the per-pod machinery asked for (probers), in order. */
  readonly syncRequests: { key: PodKey; reason: string }[];
  /** Models an agent restart: everything kept in memory is lost; the runtime and store stay. */
  restartAgent(): void;
  /** Removes the temporary root directory. */
  cleanup(): Promise<void>;
}

export const ref = { uid: UID, namespace: 'default', name: 'web' };

/** What a test may set on the harness's node and agent. */
export interface ReconcilerHarnessOptions {
  /** The node's name-resolution settings (cluster DNS, resolv.conf, hosts file); the defaults otherwise. */
  readonly dns?: PodDnsSettings;
  /** The node's security settings; `defaultPodSecurity` of the temporary root when absent. */
  readonly security?: PodSecuritySettings;
  /** Receives pod start durations (none measured when absent). */
  readonly podStartMetrics?: PodStartMetrics;
  /**
   * The pod store the reconciler reads, made anew by each (re)started agent, over the harness's
   * map (the API's pods); absent: the map itself, synced per `synced`, its origin per `stillInOrigin`.
   */
  readonly podStore?: (apiPods: Map<string, V1Pod>) => PodStore;
  /** Pod cgroups (over a fake cgroup filesystem); none when absent. */
  readonly cgroups?: PodCgroupSettings;
  /** Told the runtime state each reconcile reported; not told when absent. */
  readonly sightings?: RuntimeSightingsWriter;
  /** Which static pod holds each full name (static pods wait for their predecessors); none when absent. */
  readonly staticPodNames?: StaticPodNames;
  /** Receives pods started, orphans found and containers per pod (none counted when absent). */
  readonly podFlowMetrics?: PodSyncDeps['podFlowMetrics'];
}

export async function createReconcilerHarness(options: ReconcilerHarnessOptions = {}): Promise<ReconcilerHarness> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'nodelet-reconciler-'));
  const clock = createFakeClock(Date.parse('2026-01-01T00:00:00Z'));
  const runtime = new FakeRuntime({ now: () => clock.now(), images: ['docker.io/library/busybox:1.35'] });
  const store = new Map<string, V1Pod>();
  const probeResults = new ContainerReadinessStore();
  const status = new RecordingStatusWriter(store, probeResults, clock);
  const syncRequests: { key: PodKey; reason: string }[] = [];
  const stillInOrigin = new Set<string>();
  const finalDeletionGraces = new Map<string, number>();
  const events = new RecordingEventRecorder();
  const synced = { value: true };
  const paused = { value: false };
  const nodeObject: { value: V1Node | undefined } = { value: undefined };
  const services: { synced: boolean; items: V1Service[] } = { synced: true, items: [] };
  const runtimeClasses = new Map<string, string>();
  const logger = pino({ level: 'silent' });
  const node: PodSyncNode = { name: 'node-a', ip: '10.213.0.1', runtimeName: 'containerd', allocatable: { milliCpu: 2000, memoryBytes: 2 ** 32 }, podLogDir: path.join(root, 'logs'), containerLogLinkDir: path.join(root, 'containers'), rootDir: root, ...(options.dns === undefined ? {} : { dns: options.dns }) };
  nodeObject.value = localNodeObject(node);
  const assemble = (): PodSync =>
    assemblePodSync({
      node,
      nodeObject: { node: () => nodeObject.value },
      pods: { list: () => [...store.values()] },
      runtime,
      images: runtime,
      // The map is the origin too: a pod not in it is gone.
      store: options.podStore?.(store) ?? { get: (uid) => store.get(uid), synced: () => synced.value, confirmGone: (key) => Promise.resolve(!store.has(key.uid) && !stillInOrigin.has(key.uid)), finalDeletionGraceSeconds: (uid) => finalDeletionGraces.get(uid) },
      status,
      probeResults,
      podEvents: podEventsTo((key, reason) => syncRequests.push({ key, reason })),
      events,
      volumes: createVolumeManager({ rootDir: root, api: noApi, logger }),
      envApi: noApi,
      services: { hasSynced: () => services.synced, list: () => services.items },
      runtimeHandlers: {
        handlerOf: (name) => {
          const handler = runtimeClasses.get(name);
          return handler === undefined ? Promise.reject(new RuntimeClassNotFoundError(name)) : Promise.resolve(handler);
        },
      },
      clock,
      logger,
      admission: { isPaused: () => paused.value },
      ...(options.security === undefined ? {} : { security: options.security }),
      ...(options.podStartMetrics === undefined ? {} : { podStartMetrics: options.podStartMetrics }),
      ...(options.cgroups === undefined ? {} : { cgroups: options.cgroups }),
      ...(options.sightings === undefined ? {} : { sightings: options.sightings }),
      ...(options.staticPodNames === undefined ? {} : { staticPodNames: options.staticPodNames }),
      ...(options.podFlowMetrics === undefined ? {} : { podFlowMetrics: options.podFlowMetrics }),
    });
  let current = assemble();
  return {
    root,
    runtime,
    store,
    status,
    events,
    clock,
    synced,
    paused,
    nodeObject,
    services,
    runtimeClasses,
    syncRequests,
    stillInOrigin,
    finalDeletionGraces,
    reconciler: () => current.reconciler,
    sync: () => current,
    restartAgent: () => {
      current = assemble();
    },
    cleanup: () => rm(root, { recursive: true, force: true }),
  };
}
