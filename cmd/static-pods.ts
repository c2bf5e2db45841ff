/**
 * Wiring of static pods (`--pod-manifest-path`): the manifest-directory source, the mirror pod
 * manager, and the two hooks the status manager needs (where a static pod's status is written; that
 * a static pod is never deleted through the API). Policy lives in `controllers/pod-sources/`.
 */
import type { CoreV1Api, V1Node, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { createFileSource, type FileSource } from '../controllers/pod-sources/file-source.js';
import { createMirrorPodManager, type MirrorPodApi, type MirrorPodManager } from '../controllers/pod-sources/mirror-pods.js';
import type { DesiredPodSource } from '../controllers/pod-sources/pod-store.js';
import type { Clock } from '../util/clock.js';
import { podKeyOf, type PodKey } from '../util/pod-key.js';

/** Static pods of the agent, or none when no manifest directory is configured. */
export interface StaticPods {
  readonly source: FileSource;
  readonly mirrors: MirrorPodManager;
  /** The mirror pod's key for a static pod's UID (undefined while it has none); any other pod's own key. */
  statusTarget(key: PodKey): PodKey | undefined;
  isStatic(key: PodKey): boolean;
}

/** The mirror pod calls of client-node, with node credentials. */
export function mirrorPodApi(core: CoreV1Api): MirrorPodApi {
  return {
    create: async (pod) => {
      await core.createNamespacedPod({ namespace: pod.metadata?.namespace ?? 'default', body: pod });
    },
    delete: async (key) => {
      await core.deleteNamespacedPod({ name: key.name, namespace: key.namespace, gracePeriodSeconds: 0, body: { gracePeriodSeconds: 0, preconditions: { uid: key.uid } } });
    },
  };
}

/** Builds the static pod parts; `apiSource` is the unfiltered API source (mirror pods included). */
export function buildStaticPods(options: {
  readonly dir: string;
  readonly nodeName: string;
  readonly core: CoreV1Api;
  readonly apiSource: DesiredPodSource;
  readonly node: () => V1Node | undefined;
  readonly enqueue: (key: PodKey, reason: string) => void;
  readonly clock: Clock;
  readonly logger: Logger;
}): StaticPods {
  const { enqueue } = options;
  const source = createFileSource({
    dir: options.dir,
    nodeName: options.nodeName,
    logger: options.logger,
    clock: options.clock,
    onPod: (key, reason) => {
      enqueue(key, reason);
      // A new or removed static pod: its mirror pod follows at once, not at the next round.
      void mirrors.syncNow();
    },
  });
  const mirrors: MirrorPodManager = createMirrorPodManager({
    api: mirrorPodApi(options.core),
    staticPods: source,
    apiPods: () => options.apiSource.list(),
    node: options.node,
    requestSync: enqueue,
    clock: options.clock,
    logger: options.logger,
  });
  const manager = mirrors;
  const staticPod = (uid: string): V1Pod | undefined => source.get(uid);
  return {
    source,
    mirrors: manager,
    statusTarget: (key) => {
      const pod = staticPod(key.uid);
      if (pod === undefined) return key;
      const mirror = manager.mirrorOf(pod);
      return mirror === undefined ? undefined : podKeyOf(mirror);
    },
    isStatic: (key) => staticPod(key.uid) !== undefined,
  };
}
