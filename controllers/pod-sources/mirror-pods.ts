/**
 * Mirror pods (kubelet `pkg/kubelet/pod/mirror_client.go`): the API's read-only shadow of each
 * static pod, so `kubectl get pods` shows it and its status has somewhere to live. A mirror pod has
 * the static pod's name, namespace, labels, annotations and spec, plus `kubernetes.io/config.mirror:
 * <config hash>` and an ownerReference to this Node (NodeRestriction lets a node create a pod only
 * as such a mirror pod, bound to itself). nodelet never runs a mirror pod.
 *
 * Each round (every `periodMs`, and on `syncNow()`), level-triggered against the API cache:
 * - a static pod without a mirror pod gets one (AlreadyExists: the cache lags; next round);
 * - a mirror pod whose hash is not its static pod's (the file was edited) or that is being deleted
 *   (`kubectl delete pod`: the static pod keeps running) is deleted (UID precondition, no grace) and
 *   created again, as the kubelet does;
 * - a mirror pod with no static pod (the file was removed, or removed while nodelet was down) is
 *   deleted, once the static source it came from (its `config.source`: file or http) has synced: a
 *   URL that never answers does not keep the mirror pods of removed files.
 * After creating a mirror pod the static pod is re-synced so its status reaches the new object.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { isAlreadyExists, isConflict, isNotFound } from '../../util/api-errors.js';
import type { Clock } from '../../util/clock.js';
import { createPeriodicLoop, type PeriodicLoop } from '../../util/periodic-loop.js';
import { podDisplayName, podKeyOf, type PodKey } from '../../util/pod-key.js';
import { ANNOTATION_CONFIG_HASH, ANNOTATION_CONFIG_MIRROR, ANNOTATION_CONFIG_SOURCE, isMirrorPod } from './static-pod.js';
import type { PodEventSink } from '../../reconcilers/model/pod-event.js';

/** The API calls of the mirror manager (node credentials). */
export interface MirrorPodApi {
  create(pod: V1Pod): Promise<void>;
  /** Deletes with a UID precondition and grace period 0. */
  delete(key: PodKey): Promise<void>;
}

/** Options of {@link createMirrorPodManager}. */
export interface MirrorPodManagerOptions {
  readonly api: MirrorPodApi;
  /**
   * The static pods (of the file and URL sources), and whether the source named (`file`, `http`;
   * none: every static source) has delivered its pods once.
   */
  readonly staticPods: { list(): V1Pod[]; synced(source?: string): boolean };
  /** The pods bound to this node as the API cache has them (mirror pods among them). */
  readonly apiPods: () => V1Pod[];
  /** This Node as last read; no mirror pod is created before it is known (its UID is the owner). */
  readonly node: () => V1Node | undefined;
  /** Re-syncs a static pod (its status goes to the new mirror pod). */
  /** Told when a mirror pod was created (its static pod's status can be written now). */
  readonly podEvents: PodEventSink;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Default 2 s. */
  readonly periodMs?: number;
}

export interface MirrorPodManager {
  start(): void;
  stop(): Promise<void>;
  /** Runs a round now (or right after the one in flight); resolves true when it succeeded. */
  syncNow(): Promise<boolean>;
  /** The mirror pod (as cached) of a static pod, if one with its hash exists and is not being deleted. */
  mirrorOf(staticPod: V1Pod): V1Pod | undefined;
}

const hashOf = (pod: V1Pod): string | undefined => pod.metadata?.annotations?.[ANNOTATION_CONFIG_HASH];
const nameOf = (pod: V1Pod): string => podDisplayName(podKeyOf(pod));

/** The mirror pod of `staticPod`, to create on `node`. */
export function buildMirrorPod(staticPod: V1Pod, node: V1Node): V1Pod {
  const metadata = staticPod.metadata ?? {};
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: metadata.name,
      namespace: metadata.namespace,
      ...(metadata.labels === undefined ? {} : { labels: metadata.labels }),
      annotations: { ...metadata.annotations, [ANNOTATION_CONFIG_MIRROR]: hashOf(staticPod) ?? '' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node.metadata?.name ?? '', uid: node.metadata?.uid ?? '', controller: true }],
    },
    spec: staticPod.spec,
  };
}

/** Creates the manager; nothing runs until `start()`. */
export function createMirrorPodManager(options: MirrorPodManagerOptions): MirrorPodManager {
  const logger = options.logger.child({ component: 'mirror-pods' });
  const mirrors = (): Map<string, V1Pod> => new Map(options.apiPods().filter(isMirrorPod).map((p) => [nameOf(p), p]));
  const isCurrentMirror = (mirror: V1Pod, staticPod: V1Pod): boolean =>
    mirror.metadata?.deletionTimestamp === undefined && mirror.metadata?.annotations?.[ANNOTATION_CONFIG_MIRROR] === hashOf(staticPod);

  async function remove(mirror: V1Pod, why: string): Promise<void> {
    try {
      await options.api.delete(podKeyOf(mirror));
      logger.info({ pod: nameOf(mirror), mirrorUID: mirror.metadata?.uid, why }, 'mirror pod deleted');
    } catch (err: unknown) {
      // Gone already, or replaced under its name: the next round sees the new state.
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
  }

  async function create(staticPod: V1Pod, node: V1Node): Promise<void> {
    try {
      await options.api.create(buildMirrorPod(staticPod, node));
      logger.info({ pod: nameOf(staticPod), podUID: staticPod.metadata?.uid }, 'mirror pod created');
      options.podEvents.emit({ kind: 'mirror-pod-created', key: podKeyOf(staticPod) });
    } catch (err: unknown) {
      if (!isAlreadyExists(err)) throw err;
    }
  }

  async function round(): Promise<void> {
    const node = options.node();
    if (node?.metadata?.uid === undefined) return;
    const existing = mirrors();
    const wanted = new Set<string>();
    for (const staticPod of options.staticPods.list()) {
      const name = nameOf(staticPod);
      wanted.add(name);
      const mirror = existing.get(name);
      if (mirror !== undefined && isCurrentMirror(mirror, staticPod)) continue;
      if (mirror !== undefined) await remove(mirror, mirror.metadata?.deletionTimestamp === undefined ? 'hash differs from the static pod' : 'being deleted');
      await create(staticPod, node);
    }
    for (const [name, mirror] of existing) {
      if (wanted.has(name) || !options.staticPods.synced(mirror.metadata?.annotations?.[ANNOTATION_CONFIG_SOURCE])) continue;
      await remove(mirror, 'no static pod');
    }
  }

  const loop: PeriodicLoop = createPeriodicLoop({ name: 'mirror-pods', periodMs: options.periodMs ?? 2000, clock: options.clock, logger, run: round });
  return {
    start: () => {
      loop.start();
    },
    stop: () => loop.stop(),
    syncNow: () => loop.runNow(),
    mirrorOf(staticPod: V1Pod): V1Pod | undefined {
      const mirror = mirrors().get(nameOf(staticPod));
      return mirror !== undefined && isCurrentMirror(mirror, staticPod) ? mirror : undefined;
    },
  };
}
