/**
 * The eviction flags, under the kubelet's names, syntax and defaults (`--eviction-hard
 * memory.available<100Mi,nodefs.available<10%,…`). They are the eviction settings' base: the
 * NodeAgent's `spec.eviction` fields override them one by one, and an unset field returns to the
 * flag. A configuration the kubelet would refuse (an unknown signal, a soft threshold without a
 * grace period) stops the agent.
 */
import { DEFAULT_EVICTION, DEFAULT_EVICTION_HARD, isInvalidThresholdError, parseSignalMap, parseThresholds, type EvictionConfig } from '../controllers/eviction/thresholds.js';
import { FlagError, secondsOrDuration, type FlagSpecs } from '../util/flags.js';

function format(map: Readonly<Record<string, string>>, separator: string): string {
  return Object.entries(map).map(([signal, value]) => `${signal}${separator}${value}`).join(',');
}

export const EVICTION_FLAGS = {
  'eviction-hard': { type: 'string', value: 'SIGNAL<VALUE,...', default: format(DEFAULT_EVICTION_HARD, '<'), description: 'hard eviction thresholds (quantity or percentage; SIGNAL<0 disables one)' },
  'eviction-soft': { type: 'string', value: 'SIGNAL<VALUE,...', default: '', description: 'soft eviction thresholds (each needs --eviction-soft-grace-period)' },
  'eviction-soft-grace-period': { type: 'string', value: 'SIGNAL=DURATION,...', default: '', description: 'how long a soft threshold must be met before pods are evicted (e.g. memory.available=1m30s)' },
  'eviction-minimum-reclaim': { type: 'string', value: 'SIGNAL=VALUE,...', default: '', description: 'how far above a met threshold the signal must return before it is resolved' },
  'eviction-pressure-transition-period': { type: 'string', value: 'DURATION', default: String(DEFAULT_EVICTION.pressureTransitionPeriodSeconds), description: 'how long a pressure condition stays after its threshold stopped being met' },
  'eviction-max-pod-grace-period': { type: 'string', value: 'SECONDS', default: '0', description: 'grace period of pods evicted for a soft threshold (at most their own)' },
} as const satisfies FlagSpecs;

interface EvictionFlagValues {
  readonly 'eviction-hard': string;
  readonly 'eviction-soft': string;
  readonly 'eviction-soft-grace-period': string;
  readonly 'eviction-minimum-reclaim': string;
  readonly 'eviction-pressure-transition-period': string;
  readonly 'eviction-max-pod-grace-period': string;
}

function seconds(flag: string, raw: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) > 86400) throw new FlagError(`--${flag} must be an integer from 0 to 86400 (seconds), got "${raw}"`);
  return Number(raw);
}

/** The eviction flags as settings. @throws FlagError on anything the kubelet would refuse. */
export function parseEvictionFlags(values: EvictionFlagValues): EvictionConfig {
  try {
    const config: EvictionConfig = {
      hard: parseSignalMap('eviction-hard', values['eviction-hard'], '<'),
      soft: parseSignalMap('eviction-soft', values['eviction-soft'], '<'),
      softGracePeriod: parseSignalMap('eviction-soft-grace-period', values['eviction-soft-grace-period'], '='),
      minimumReclaim: parseSignalMap('eviction-minimum-reclaim', values['eviction-minimum-reclaim'], '='),
      pressureTransitionPeriodSeconds: secondsOrDuration('eviction-pressure-transition-period', values['eviction-pressure-transition-period'], 86400),
      maxPodGracePeriodSeconds: seconds('eviction-max-pod-grace-period', values['eviction-max-pod-grace-period']),
    };
    parseThresholds(config);
    return config;
  } catch (err: unknown) {
    if (isInvalidThresholdError(err)) throw new FlagError(`eviction settings: ${err.message}`);
    throw err;
  }
}
