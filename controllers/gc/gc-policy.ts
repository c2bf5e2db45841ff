/** The GC policy from the settings' shape (NodeAgent `spec.gc`, the GC flags): seconds to milliseconds. */
import type { GcPolicy } from './gc-manager.js';

/** The settings the policy is made from (the NodeAgent's `GcSettings`). */
export interface GcPolicySettings {
  readonly maxDeadContainersPerPod: number;
  readonly maxDeadContainers: number;
  readonly minContainerAgeSeconds: number;
  readonly imageHighThresholdPercent: number;
  readonly imageLowThresholdPercent: number;
  readonly imageMinimumGCAgeSeconds: number;
  readonly imageMaximumGCAgeSeconds: number;
}

export function gcPolicyOf(settings: GcPolicySettings): GcPolicy {
  return {
    container: { minAgeMs: settings.minContainerAgeSeconds * 1000, maxPerPodContainer: settings.maxDeadContainersPerPod, maxContainers: settings.maxDeadContainers },
    image: {
      highThresholdPercent: settings.imageHighThresholdPercent,
      lowThresholdPercent: settings.imageLowThresholdPercent,
      minAgeMs: settings.imageMinimumGCAgeSeconds * 1000,
      maxAgeMs: settings.imageMaximumGCAgeSeconds * 1000,
    },
  };
}
