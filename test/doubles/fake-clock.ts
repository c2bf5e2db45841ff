/**
 * A manual clock for tests: time moves only when the test calls `advance`, and timers due by then
 * fire in order of their due time. Production code never imports this file.
 */
import type { Clock, TimerHandle } from '../../util/clock.js';

interface PendingTimer {
  readonly id: number;
  readonly dueAt: number;
  readonly fn: () => void;
}

/** A {@link Clock} whose time only moves when told to. */
export interface FakeClock extends Clock {
  /** Moves time forward by `ms`, firing every timer that falls due, then lets promises settle. */
  advance(ms: number): Promise<void>;
  /** Number of timers scheduled and not yet fired or cancelled. */
  pendingTimers(): number;
  /** Milliseconds until the next timer fires, or undefined when none is pending. */
  nextTimerIn(): number | undefined;
}

/** Lets callbacks chained on already-settled promises (and one macrotask turn) run. */
export async function settle(): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Creates a fake clock starting at `startMs` (epoch milliseconds). */
export function createFakeClock(startMs = Date.parse('2030-01-01T00:00:00Z')): FakeClock {
  let now = startMs;
  let nextId = 1;
  const timers = new Map<number, PendingTimer>();

  function nextDue(limit: number): PendingTimer | undefined {
    let best: PendingTimer | undefined;
    for (const timer of timers.values()) {
      if (timer.dueAt > limit) continue;
      if (!best || timer.dueAt < best.dueAt || (timer.dueAt === best.dueAt && timer.id < best.id)) best = timer;
    }
    return best;
  }

  return {
    now: () => now,
    setTimeout(fn: () => void, ms: number): TimerHandle {
      const id = nextId++;
      timers.set(id, { id, dueAt: now + Math.max(0, ms), fn });
      return id;
    },
    clearTimeout(handle: unknown): void {
      if (typeof handle === 'number') timers.delete(handle);
    },
    async advance(ms: number): Promise<void> {
      const target = now + ms;
      await settle();
      for (let timer = nextDue(target); timer; timer = nextDue(target)) {
        timers.delete(timer.id);
        now = Math.max(now, timer.dueAt);
        timer.fn();
        await settle();
      }
      now = target;
      await settle();
    },
    pendingTimers: () => timers.size,
    nextTimerIn(): number | undefined {
      let min: number | undefined;
      for (const timer of timers.values()) min = min === undefined ? timer.dueAt : Math.min(min, timer.dueAt);
      return min === undefined ? undefined : min - now;
    },
  };
}
