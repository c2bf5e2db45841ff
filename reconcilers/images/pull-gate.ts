/**
 * Node-wide limits on image pulls, as the kubelet's image puller and throttled image service apply
 * them: at most `concurrency` pulls run at once (1 when pulls are serialized, the kubelet's default);
 * a pull waits for a free slot in arrival order. Once it has a slot, it must also get a token from a
 * bucket refilled at `qps` per second holding at most `burst` (the registry pull rate): without one
 * the pull fails at once (`pull QPS exceeded`), as the kubelet's does, and backs off like any failed
 * pull. The limits are live: raising the concurrency lets waiting pulls start at once.
 */
import type { Clock } from '../../util/clock.js';

/** The limits, resolved from the node's settings. */
export interface ImagePullLimits {
  /** Pulls at once; `null`: no limit. */
  readonly concurrency: number | null;
  /** Tokens per second (0: no rate limit). */
  readonly qps: number;
  /** Bucket size. */
  readonly burst: number;
}

/** The kubelet's defaults: serialized, 5 pulls per second with a burst of 10. */
export const DEFAULT_PULL_LIMITS: ImagePullLimits = { concurrency: 1, qps: 5, burst: 10 };

interface Waiter {
  readonly grant: () => void;
}

/** Frees the slot a pull held; calling it twice frees one slot only. */
export type ReleasePullSlot = () => void;

export class PullGate {
  private active = 0;
  private readonly waiters: Waiter[] = [];
  private tokens: number;
  private refilledAtMs: number;

  constructor(
    private limits: ImagePullLimits,
    private readonly clock: Clock,
  ) {
    this.tokens = limits.burst;
    this.refilledAtMs = clock.now();
  }

  /** Pulls running now, and pulls waiting for a slot (for tests and self-reports). */
  get counts(): { readonly active: number; readonly waiting: number } {
    return { active: this.active, waiting: this.waiters.length };
  }

  /** Changes the limits from now on; the bucket keeps its tokens, capped at the new burst. */
  setLimits(limits: ImagePullLimits): void {
    this.refill();
    this.limits = limits;
    this.tokens = Math.min(this.tokens, limits.burst);
    this.grantWaiting();
  }

  /** Waits for a pull slot; `signal` gives up waiting (rejecting with its reason). */
  acquire(signal?: AbortSignal): Promise<ReleasePullSlot> {
    signal?.throwIfAborted();
    if (this.waiters.length === 0 && this.hasFreeSlot()) return Promise.resolve(this.take());
    return new Promise<ReleasePullSlot>((resolve, reject) => {
      const onAbort = (): void => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(signal?.reason instanceof Error ? signal.reason : new Error('pull cancelled while waiting for a slot'));
      };
      const waiter: Waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.take());
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Takes a rate token when one is there; false: over the registry pull rate. */
  tryTakeToken(): boolean {
    if (this.limits.qps <= 0) return true;
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  private refill(): void {
    const now = this.clock.now();
    const elapsedSeconds = Math.max(0, now - this.refilledAtMs) / 1000;
    this.refilledAtMs = now;
    if (this.limits.qps > 0) this.tokens = Math.min(this.limits.burst, this.tokens + elapsedSeconds * this.limits.qps);
  }

  private hasFreeSlot(): boolean {
    return this.limits.concurrency === null || this.active < this.limits.concurrency;
  }

  private take(): ReleasePullSlot {
    this.active += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active -= 1;
      this.grantWaiting();
    };
  }

  private grantWaiting(): void {
    while (this.waiters.length > 0 && this.hasFreeSlot()) this.waiters.shift()?.grant();
  }
}
