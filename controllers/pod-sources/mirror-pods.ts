/**
 * Mirror pods (kubelet `pkg/kubelet/pod/mirror_client.go`): the API's read-only shadow of each
 * static pod, so `kubectl get pods` shows it and its status has somewhere to live. A mirror pod has
 * the static pod's name, namespace, labels, annotations and spec, plus `kubernetes.io/config.mirror:
 * <config hash>` and an ownerReference to this Node (NodeRestriction lets a node create a pod only
 * as such a mirror pod, bound to itself). nodelet never runs a mirror pod.
 *
 * Each round (every `periodMs`, on `syncNow()`: a static pod added or removed, a static pod that
 * let go of its full name) is level-triggered against the API cache: what to create and delete is
 * decided by `planMirrorRound` (`mirror-pod-plan.ts`, where the rules are), then done in order.
 * In short: a static pod gets a mirror pod with its hash; a stale one (an edited file, a `kubectl
 * delete pod`) is deleted (UID precondition, no grace) and created again, as the kubelet does; a
 * mirror pod whose static pod is gone is deleted once that pod has terminated, so it stays, with
 * its UID, while the pod runs out its grace period; an edited manifest's mirror pod waits likewise.
 * After creating a mirror pod the static pod is re-synced so its status reaches the new object.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { isAlreadyExists, isConflict, isNotFound } from '../../util/api-errors.js';
import type { Clock } from '../../util/clock.js';
import { createPeriodicLoop, type PeriodicLoop } from '../../util/periodic-loop.js';
import { podKeyOf, type PodKey } from '../../util/pod-key.js';
import { fullNameOf, type StaticPodNamesView } from '../../reconcilers/lifecycle/static-pod-names.js';
import type { PodEventSink } from '../../reconcilers/model/pod-event.js';
import { isCurrentMirror, planMirrorRound, type MirrorDeleteReason } from './mirror-pod-plan.js';
import { ANNOTATION_CONFIG_HASH, ANNOTATION_CONFIG_MIRROR, isMirrorPod } from './static-pod.js';

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
  /** Told when a mirror pod was created (its static pod's status can be written now). */
  readonly podEvents: PodEventSink;
  /**
   * Which static pod holds each full name (running, or still stopping): its mirror pod is kept, and
   * another static pod of the name waits. Absent: no name is held.
   */
  readonly staticPodNames?: StaticPodNamesView;
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

/** Some steps of a round failed (each logged); the loop retries the round with backoff. */
export class MirrorRoundError extends Error {
  override readonly name = 'MirrorRoundError';
  constructor(readonly pods: readonly string[]) {
    super(`mirror pods not written for ${pods.join(', ')}`);
  }
}

const hashOf = (pod: V1Pod): string | undefined => pod.metadata?.annotations?.[ANNOTATION_CONFIG_HASH];
const nameOf = (pod: V1Pod): string => fullNameOf(podKeyOf(pod));

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
  const names: StaticPodNamesView = options.staticPodNames ?? { holderOf: () => undefined };

  async function remove(mirror: V1Pod, why: MirrorDeleteReason): Promise<void> {
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

  /**
   * Every step is tried: one static pod whose mirror pod cannot be written (its namespace is gone,
   * the API refuses it) must not keep the others' from being written, as each of the kubelet's pod
   * syncs writes its own. The failures fail the round, which the loop retries with backoff.
   */
  async function round(): Promise<void> {
    const node = options.node();
    if (node?.metadata?.uid === undefined) return;
    const steps = planMirrorRound({ staticPods: options.staticPods.list(), mirrors: mirrors(), synced: (source) => options.staticPods.synced(source), names });
    const failed: string[] = [];
    for (const step of steps) {
      const pod = step.kind === 'delete' ? step.mirror : step.staticPod;
      try {
        if (step.kind === 'delete') await remove(step.mirror, step.why);
        else await create(step.staticPod, node);
      } catch (err: unknown) {
        logger.warn({ pod: nameOf(pod), step: step.kind, err }, step.kind === 'delete' ? 'failed deleting a mirror pod' : 'failed creating a mirror pod');
        failed.push(nameOf(pod));
      }
    }
    if (failed.length > 0) throw new MirrorRoundError(failed);
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
