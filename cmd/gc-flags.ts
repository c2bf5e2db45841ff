/**
 * The garbage-collection flags, under the kubelet's names (its durations as whole seconds here).
 * They are the GC policy's base: the NodeAgent's `spec.gc` fields override them one by one, and an
 * unset field returns to the flag. A low threshold not below the high one, or a maximum image age
 * (when set) not above the minimum, stops the agent, as the kubelet refuses such a configuration.
 */
import type { GcSettings } from '../controllers/nodeagent/settings.js';
import { FlagError, INT32_MAX, parseInt32, secondsOrDuration, type FlagSpecs } from '../util/flags.js';

/** The sandbox image of containerd's default configuration in the test cluster and the chart. */
export const DEFAULT_SANDBOX_IMAGE = 'registry.k8s.io/pause:3.10';

export const GC_FLAGS = {
  'image-gc-high-threshold': { type: 'string', value: 'PERCENT', default: '85', description: 'image filesystem usage at which unused images are removed (100: never)' },
  'image-gc-low-threshold': { type: 'string', value: 'PERCENT', default: '80', description: 'usage image garbage collection frees down to' },
  'image-minimum-gc-age': { type: 'string', value: 'DURATION', default: '120', description: 'images first seen more recently are never removed for disk usage' },
  'image-maximum-gc-age': { type: 'string', value: 'DURATION', default: '0', description: 'unused images not seen in use for longer are removed whatever the disk usage (0: never)' },
  'minimum-container-ttl-duration': { type: 'string', value: 'DURATION', default: '0', description: 'exited containers younger than this are never removed' },
  'maximum-dead-containers-per-container': { type: 'string', value: 'N', default: '1', description: 'exited instances kept per pod container (the newest always stays)' },
  'maximum-dead-containers': { type: 'string', value: 'N', default: '-1', description: 'exited instances kept across the node, negative: no limit (the newest of each pod container always stays)' },
  'pod-infra-container-image': { type: 'string', value: 'IMAGE', default: DEFAULT_SANDBOX_IMAGE, description: "the runtime's sandbox image, never removed by image garbage collection" },
} as const satisfies FlagSpecs;

interface GcFlagValues {
  readonly 'image-gc-high-threshold': string;
  readonly 'image-gc-low-threshold': string;
  readonly 'image-minimum-gc-age': string;
  readonly 'image-maximum-gc-age': string;
  readonly 'minimum-container-ttl-duration': string;
  readonly 'maximum-dead-containers-per-container': string;
  readonly 'maximum-dead-containers': string;
}

/** An integer from 0 to `max` (at most int32's largest). */
function integerIn(flag: string, raw: string, max: number): number {
  const value = parseInt32(raw);
  if (value === undefined || value < 0 || value > max) throw new FlagError(`--${flag} must be an integer from 0 to ${max}, got "${raw}"`);
  return value;
}

/** An int32 as the kubelet's `--maximum-dead-containers` takes it; any negative value (no limit) becomes -1. */
function limitOrNone(flag: string, raw: string): number {
  const limit = parseInt32(raw);
  if (limit === undefined) throw new FlagError(`--${flag} must be an integer (negative: no limit), got "${raw}"`);
  return limit < 0 ? -1 : limit;
}

/** The GC flags as the policy's base. @throws FlagError on a bad value or a pair the kubelet refuses. */
export function parseGcFlags(values: GcFlagValues): GcSettings {
  const gc: GcSettings = {
    imageHighThresholdPercent: integerIn('image-gc-high-threshold', values['image-gc-high-threshold'], 100),
    imageLowThresholdPercent: integerIn('image-gc-low-threshold', values['image-gc-low-threshold'], 100),
    imageMinimumGCAgeSeconds: secondsOrDuration('image-minimum-gc-age', values['image-minimum-gc-age'], 86400),
    imageMaximumGCAgeSeconds: secondsOrDuration('image-maximum-gc-age', values['image-maximum-gc-age'], INT32_MAX),
    minContainerAgeSeconds: secondsOrDuration('minimum-container-ttl-duration', values['minimum-container-ttl-duration'], 86400),
    maxDeadContainersPerPod: integerIn('maximum-dead-containers-per-container', values['maximum-dead-containers-per-container'], 100),
    maxDeadContainers: limitOrNone('maximum-dead-containers', values['maximum-dead-containers']),
  };
  if (gc.imageLowThresholdPercent >= gc.imageHighThresholdPercent) {
    throw new FlagError(`--image-gc-low-threshold (${gc.imageLowThresholdPercent}) must be lower than --image-gc-high-threshold (${gc.imageHighThresholdPercent})`);
  }
  if (gc.imageMaximumGCAgeSeconds > 0 && gc.imageMaximumGCAgeSeconds <= gc.imageMinimumGCAgeSeconds) {
    throw new FlagError(`--image-maximum-gc-age (${gc.imageMaximumGCAgeSeconds} s) must be 0 or greater than --image-minimum-gc-age (${gc.imageMinimumGCAgeSeconds} s)`);
  }
  return gc;
}
