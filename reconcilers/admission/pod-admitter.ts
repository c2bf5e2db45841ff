/**
 * Admission's per-pod state: which pods were rejected, and why. The reconciler asks before a pod
 * it has not admitted yet runs; a rejection is recorded as a Warning event once, and kept until the
 * pod is forgotten so every later reconcile reports the same terminal Failed status — even before
 * the API shows it, and whatever the handlers would answer now.
 *
 * Registered on the pod lifecycle (a per-pod manager), so a forgotten pod leaves nothing here.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { EventRecorder } from '../events/event-recorder.js';
import type { PodLifecycleObserver } from '../lifecycle/observer.js';
import type { PodKey } from '../../util/pod-key.js';
import { admitPod, type PodAdmitHandler, type Rejection } from './admit.js';

/** The status message of a rejected pod, as the kubelet's `rejectPod` words it. */
export function rejectedStatusMessage(message: string): string {
  return `Pod was rejected: ${message}`;
}

export class PodAdmitter implements PodLifecycleObserver {
  private readonly rejected = new Map<string, Rejection>();

  constructor(
    private readonly handlers: readonly PodAdmitHandler[],
    private readonly events: EventRecorder,
  ) {}

  /** The rejection already decided for a pod, if any. */
  rejectionOf(uid: string): Rejection | undefined {
    return this.rejected.get(uid);
  }

  /**
   * Runs the handlers over a pod that is about to run for the first time since the agent started;
   * a rejection is remembered and recorded as a Warning event (once).
   */
  admit(pod: V1Pod): Rejection | undefined {
    const uid = pod.metadata?.uid ?? '';
    const known = this.rejected.get(uid);
    if (known !== undefined) return known;
    const result = admitPod(this.handlers, { pod });
    if (result.admit) return undefined;
    this.rejected.set(uid, result);
    this.events.record(pod, { type: 'Warning', reason: result.reason, message: result.message });
    return result;
  }

  podForgotten(key: PodKey): void {
    this.rejected.delete(key.uid);
  }
}
