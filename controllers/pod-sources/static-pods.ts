/**
 * Static pods (`--pod-manifest-path`, `--manifest-url`): the manifest-directory and URL sources,
 * one mirror pod manager over both, which static pod holds each full name (read by the mirror
 * manager, kept by the reconciler: `reconcilers/lifecycle/static-pod-names.ts`), and the two hooks
 * the status manager needs (where a static pod's status is written; that a static pod is never
 * deleted through the API).
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { CoreV1Client } from '../../kube/core-v1.js';
import type { Logger } from 'pino';
import { createFileSource } from './file-source.js';
import { createMirrorPodManager, type MirrorPodApi, type MirrorPodManager } from './mirror-pods.js';
import type { DesiredPodSource } from './pod-store.js';
import { createUrlSource, type ManifestUrlSettings } from './url-source.js';
import type { Clock } from '../../util/clock.js';
import { podKeyOf, type PodKey } from '../../util/pod-key.js';
import type { PodEventSink } from '../../reconcilers/model/pod-event.js';
import { StaticPodNames } from '../../reconcilers/lifecycle/static-pod-names.js';

/** Static pods of the agent, or none when neither a manifest directory nor a URL is configured. */
export interface StaticPods {
  /** The file source and/or the URL source, in that order. */
  readonly sources: readonly DesiredPodSource[];
  readonly mirrors: MirrorPodManager;
  /** Which static pod holds each full name: register it on the pod lifecycle and hand it to the reconciler. */
  readonly names: StaticPodNames;
  /** The mirror pod's key for a static pod's UID (undefined while it has none); any other pod's own key. */
  statusTarget(key: PodKey): PodKey | undefined;
  isStatic(key: PodKey): boolean;
}

/** The mirror pod calls of client-node, with node credentials. */
export function mirrorPodApi(core: Pick<CoreV1Client, 'createNamespacedPod' | 'deleteNamespacedPod'>): MirrorPodApi {
  return {
    create: async (pod) => {
      await core.createNamespacedPod({ namespace: pod.metadata?.namespace ?? 'default', body: pod });
    },
    delete: async (key) => {
      await core.deleteNamespacedPod({ name: key.name, namespace: key.namespace, gracePeriodSeconds: 0, body: { gracePeriodSeconds: 0, preconditions: { uid: key.uid } } });
    },
  };
}

/**
 * One view over the static sources for the mirror manager: every static pod; synced per source
 * (`file`, `http`), a source not configured counting as synced (its mirror pods are orphans).
 */
export function mergedStaticPods(sources: readonly DesiredPodSource[]): { list(): V1Pod[]; synced(source?: string): boolean; get(uid: string): V1Pod | undefined } {
  return {
    list: () => sources.flatMap((s) => s.list()),
    synced: (source) => sources.filter((s) => source === undefined || s.name === source).every((s) => s.synced()),
    get: (uid) => sources.map((s) => s.get(uid)).find((pod) => pod !== undefined),
  };
}

/** Options of {@link buildStaticPods}. */
export interface StaticPodsOptions {
  /** `--pod-manifest-path`. */
  readonly dir: string | undefined;
  /** `--manifest-url` and its flags. */
  readonly manifestUrl: ManifestUrlSettings | undefined;
  readonly nodeName: string;
  readonly core: Pick<CoreV1Client, 'createNamespacedPod' | 'deleteNamespacedPod'>;
  /** The unfiltered API source (mirror pods included). */
  readonly apiSource: DesiredPodSource;
  readonly node: () => V1Node | undefined;
  /** Where the static sources and the mirror manager tell their pod events. */
  readonly podEvents: PodEventSink;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** Builds the static pod parts; undefined when no static source is configured. */
export function buildStaticPods(options: StaticPodsOptions): StaticPods | undefined {
  const { podEvents, nodeName, clock, logger } = options;
  const sourceEvents: PodEventSink = {
    emit: (event) => {
      podEvents.emit(event);
      // A new or removed static pod: its mirror pod follows at once, not at the next round.
      void mirrors.syncNow();
    },
  };
  const sources: DesiredPodSource[] = [];
  if (options.dir !== undefined) sources.push(createFileSource({ dir: options.dir, nodeName, logger, clock, podEvents: sourceEvents }));
  const url = options.manifestUrl;
  if (url !== undefined) sources.push(createUrlSource({ url: url.url, headers: url.headers, periodMs: url.periodMs, nodeName, logger, clock, podEvents: sourceEvents }));
  if (sources.length === 0) return undefined;
  const staticPods = mergedStaticPods(sources);
  // A static pod that let go of its name (terminated, forgotten): its mirror pod goes, or passes to the next pod of the name, at once.
  const names = new StaticPodNames({
    onReleased: () => {
      void mirrors.syncNow();
    },
  });
  const mirrors: MirrorPodManager = createMirrorPodManager({
    api: mirrorPodApi(options.core),
    staticPods,
    staticPodNames: names,
    apiPods: () => options.apiSource.list(),
    node: options.node,
    podEvents,
    clock,
    logger,
  });
  return {
    sources,
    mirrors,
    names,
    statusTarget: (key) => {
      const pod = staticPods.get(key.uid);
      if (pod === undefined) return key;
      const mirror = mirrors.mirrorOf(pod);
      return mirror === undefined ? undefined : podKeyOf(mirror);
    },
    isStatic: (key) => staticPods.get(key.uid) !== undefined,
  };
}
