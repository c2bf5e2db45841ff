/**
 * Keeps a running pod's configMap, secret, projected and downwardAPI volumes following their
 * sources, as the kubelet's volume manager remounts `RequiresRemount` volumes on every pod sync:
 * a changed ConfigMap or Secret, a new label or annotation (downwardAPI), a service-account token
 * near its expiry reach the files a running container reads, without a restart.
 *
 * Runs on syncs that start nothing (those that start something prepare every volume anyway). The
 * periodic resync guarantees such a sync at least once per resync period; PLEG events and probe
 * results bring more, so one pod is refreshed at most once per {@link MIN_REFRESH_INTERVAL_MS}
 * (each refresh reads its sources from the API server) — unless its labels or annotations changed:
 * the pod update that carries them is itself a sync, and downwardAPI files show them at once.
 *
 * A failed refresh leaves the files as they were (containers keep reading the last good contents,
 * as under the kubelet) and is a `FailedMount` Warning event; it never fails the sync.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Clock } from '../../util/clock.js';
import type { PodKey } from '../../util/pod-key.js';
import type { EventRecorder } from '../events/event-recorder.js';
import { mountFailureMessages, type VolumeManager } from './index.js';
import { FOLLOWING_SOURCE_KINDS, classifyVolume } from './volume-kind.js';

/** At most one refresh of a pod's volumes per this interval. */
export const MIN_REFRESH_INTERVAL_MS = 10_000;

/** What the refresher needs. */
export interface VolumeRefreshOptions {
  readonly volumes: Pick<VolumeManager, 'refresh'>;
  readonly events: EventRecorder;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** Whether any of the pod's volumes follows its source while the pod runs. */
export function hasFollowingVolumes(pod: V1Pod): boolean {
  return (pod.spec?.volumes ?? []).some((v) => FOLLOWING_SOURCE_KINDS.has(classifyVolume(v).kind));
}

/** The pod metadata a downwardAPI volume may show and a pod update may change. */
function downwardMetadata(pod: V1Pod): string {
  return JSON.stringify([pod.metadata?.labels ?? {}, pod.metadata?.annotations ?? {}]);
}

/** Refreshes running pods' following volumes; a per-pod manager (forgets a pod with it). */
export class RunningVolumeRefresher {
  /** When each pod's volumes were last refreshed (clock ms), and its labels and annotations then. */
  private readonly last = new Map<string, { readonly atMs: number; readonly metadata: string }>();

  constructor(private readonly options: VolumeRefreshOptions) {}

  /** Refreshes the pod's following volumes unless it has none or was refreshed moments ago. */
  async refresh(pod: V1Pod, signal?: AbortSignal): Promise<void> {
    if (!hasFollowingVolumes(pod)) return;
    const uid = pod.metadata?.uid ?? '';
    const now = this.options.clock.now();
    const metadata = downwardMetadata(pod);
    const last = this.last.get(uid);
    if (last?.metadata === metadata && now - last.atMs < MIN_REFRESH_INTERVAL_MS) return;
    signal?.throwIfAborted();
    this.last.set(uid, { atMs: now, metadata });
    try {
      await this.options.volumes.refresh(pod);
    } catch (error) {
      this.options.logger.warn({ podUID: uid, err: error }, 'volume refresh failed; the running containers keep the last contents');
      for (const message of mountFailureMessages(error)) this.options.events.record(pod, { type: 'Warning', reason: 'FailedMount', message });
    }
  }

  /** Forgets a pod that is gone. */
  podForgotten(key: PodKey): void {
    this.last.delete(key.uid);
  }

  /** Pods whose last refresh is remembered. */
  size(): number {
    return this.last.size;
  }
}
