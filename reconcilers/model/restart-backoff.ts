/**
 * The kubelet's restart backoff (client-go flowcontrol.Backoff as kuberuntime uses it): a
 * container that exited waits before it is started again, 10 s after the first exit, doubling to
 * 5 min (the maximum is the node's `crashLoopBackOff.maxContainerRestartPeriod`, live; a maximum under
 * 10 s is also the first wait, as the kubelet's newCrashLoopBackOff has it). An entry is keyed by pod
 * UID, container name and spec hash, and measured from the exit (`finishedAt`) that caused it. An
 * entry untouched for 10 min (the container ran that long before exiting again) starts over.
 *
 * The same mechanism serves image pulls (ImagePullBackOff), keyed by pod UID and image.
 *
 * Entries live in memory: an agent restart forgets them, as a kubelet restart does.
 */
import type { BackoffPolicy } from '../../util/backoff.js';
import type { PodKey } from '../../util/pod-key.js';
import type { PodLifecycleObserver } from '../lifecycle/observer.js';

export const CONTAINER_RESTART_BACKOFF: BackoffPolicy = { initialMs: 10_000, maxMs: 300_000 };
export const IMAGE_PULL_BACKOFF: BackoffPolicy = { initialMs: 10_000, maxMs: 300_000 };

/** The bounds of `crashLoopBackOff.maxContainerRestartPeriod`, as the kubelet validates them (1 s to 5 min). */
export const MAX_CONTAINER_RESTART_PERIOD_SECONDS = { min: 1, max: 300 } as const;

/**
 * The container restart backoff for a maximum restart period: the first wait is 10 s, or the
 * maximum itself when that is shorter (the kubelet's newCrashLoopBackOff).
 */
export function crashLoopBackOffPolicy(maxRestartPeriodMs: number): BackoffPolicy {
  return { initialMs: Math.min(CONTAINER_RESTART_BACKOFF.initialMs, maxRestartPeriodMs), maxMs: maxRestartPeriodMs };
}

/**
 * An entry untouched this long starts over: fixed at 10 min, whatever the maximum (the kubelet's
 * crash-loop backoff overrides flowcontrol's 2 × maximum with 600 s; for image pulls 2 × 5 min is the same).
 */
const RESET_AFTER_MS = 600_000;

interface Entry {
  backoffMs: number;
  /** The event time (ms) the backoff was last advanced for. */
  lastUpdateMs: number;
}

/** Per-key exponential backoff measured from event times. */
export class RestartBackoff implements PodLifecycleObserver {
  private readonly entries = new Map<string, Entry>();

  constructor(private policy: BackoffPolicy = CONTAINER_RESTART_BACKOFF) {}

  private expired(entry: Entry, eventMs: number): boolean {
    return eventMs - entry.lastUpdateMs > RESET_AFTER_MS;
  }

  /** The policy in effect. */
  get currentPolicy(): BackoffPolicy {
    return this.policy;
  }

  /**
   * Changes the policy from now on (a live node setting): every running wait is cut to the new
   * maximum at once; a wait shorter than it keeps doubling from where it is.
   */
  setPolicy(policy: BackoffPolicy): void {
    this.policy = policy;
    for (const entry of this.entries.values()) entry.backoffMs = Math.min(entry.backoffMs, policy.maxMs);
  }

  /**
   * When the key may act again after an event at `eventMs`, or `undefined` when it may act now.
   * `nowMs` is the current time.
   */
  blockedUntil(key: string, eventMs: number, nowMs: number): { untilMs: number; backoffMs: number } | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined || this.expired(entry, eventMs)) return undefined;
    const untilMs = eventMs + entry.backoffMs;
    return nowMs < untilMs ? { untilMs, backoffMs: entry.backoffMs } : undefined;
  }

  /** Like `blockedUntil`, measured from the key's last recorded event (image pulls). */
  blockedSinceLastUpdate(key: string, nowMs: number): { untilMs: number; backoffMs: number } | undefined {
    const entry = this.entries.get(key);
    return entry === undefined ? undefined : this.blockedUntil(key, entry.lastUpdateMs, nowMs);
  }

  /** Records that the key acted after an event at `eventMs`: the next wait doubles (capped). */
  next(key: string, eventMs: number): void {
    const entry = this.entries.get(key);
    if (entry === undefined || this.expired(entry, eventMs)) {
      this.entries.set(key, { backoffMs: this.policy.initialMs, lastUpdateMs: eventMs });
      return;
    }
    entry.backoffMs = Math.min(entry.backoffMs * 2, this.policy.maxMs);
    entry.lastUpdateMs = eventMs;
  }

  /** Forgets a pod that is gone: every key is `<uid>/…`. */
  podForgotten(key: PodKey): void {
    this.forgetPrefix(`${key.uid}/`);
  }

  /** Forgets every key that starts with `prefix` (a finished pod's entries). */
  forgetPrefix(prefix: string): void {
    for (const key of this.entries.keys()) if (key.startsWith(prefix)) this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}

/** `10s`, `1m20s`, `5m0s`: Go's duration format, as the kubelet's messages print it. */
export function formatDuration(ms: number): string {
  const totalSeconds = Math.round(ms / 1000);
  const minutes = Math.floor(totalSeconds / 60);
  const seconds = totalSeconds % 60;
  return minutes === 0 ? `${seconds}s` : `${minutes}m${seconds}s`;
}
