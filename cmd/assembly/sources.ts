/** The desired-pod store over the API source and, with `--pod-manifest-path` / `--manifest-url`, the static sources. */
import { CoreV1Client } from '../../kube/core-v1.js';
import type { NodeController } from '../../controllers/node/node-controller.js';
import { createPodSource } from '../../controllers/pod-sources/api-source.js';
import { createDesiredPodStore, withoutMirrorPods, type DesiredPodSource, type DesiredPodStore } from '../../controllers/pod-sources/pod-store.js';
import { isMirrorPod } from '../../controllers/pod-sources/static-pod.js';
import { buildStaticPods, type StaticPods } from '../../controllers/pod-sources/static-pods.js';
import type { PodEventSink } from '../../reconcilers/model/pod-event.js';
import type { AgentCore } from './core.js';

export function buildSources(core: AgentCore, node: NodeController, podEvents: PodEventSink): { store: DesiredPodStore; staticPods: StaticPods | undefined } {
  const { settings, kube, clock, logger } = core;
  const apiSource = createPodSource({ kube, nodeName: settings.nodeName, logger, podEvents });
  const staticPods = buildStaticPods({
    dir: settings.podManifestPath,
    manifestUrl: settings.manifestUrl,
    nodeName: settings.nodeName,
    core: new CoreV1Client(kube),
    apiSource,
    node: () => node.node(),
    podEvents,
    clock,
    logger,
  });
  // Mirror pods are never run: the store sees the API source without them.
  const sources: DesiredPodSource[] = [withoutMirrorPods(apiSource, isMirrorPod), ...(staticPods?.sources ?? [])];
  return { store: createDesiredPodStore({ sources, podEvents }), staticPods };
}
