/**
 * The pause gate behind the NodeAgent's `spec.paused`: the reconciler asks `isPaused()` before it
 * creates the first sandbox of a pod (its admission seam). Resuming calls `onResume` once, which
 * the agent wires to a resync of every pod, so the pods held while paused start at once instead
 * of at the next periodic resync.
 */
import type { Logger } from 'pino';

/** A switch the NodeAgent controller flips and the reconciler reads. */
export interface PauseGate {
  /** True while new pods must not start. */
  isPaused(): boolean;
  setPaused(paused: boolean): void;
}

/** Options of {@link createPauseGate}. */
export interface PauseGateOptions {
  /** Called when the gate opens again (paused → not paused); must not throw. */
  readonly onResume: () => void;
  readonly logger: Logger;
}

/** Creates an open gate (not paused). */
export function createPauseGate(options: PauseGateOptions): PauseGate {
  let paused = false;
  return {
    isPaused: () => paused,
    setPaused(next: boolean): void {
      if (next === paused) return;
      paused = next;
      if (paused) {
        options.logger.info('paused: new pods are not started until the NodeAgent is unpaused');
        return;
      }
      options.logger.info('resumed: resyncing every pod so the held ones start');
      options.onResume();
    },
  };
}
