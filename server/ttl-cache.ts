/**
 * A small map whose entries expire, each with its own time to live; reads at the injected clock.
 * The node server keeps TokenReview and SubjectAccessReview answers in it, as the kubelet's
 * webhook authenticator and authorizer cache theirs. Bounded: past `maxEntries` the oldest entry goes.
 */
import type { Clock } from '../util/clock.js';

export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly maxEntries = 4096,
  ) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.clock.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: V, ttlMs: number): void {
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { value, expiresAt: this.clock.now() + ttlMs });
  }
}
