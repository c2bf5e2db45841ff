import type { ProbeResult } from './probe-worker-state.js';

/** What one run of a probe found: the result, and what the kubelet would report of it. */
export interface ProbeOutcome {
  readonly result: ProbeResult;
  /** What the kubelet would print after "Liveness probe failed: ". */
  readonly output: string;
  /** A success the kubelet warns about (an HTTP redirect it did not follow): the warning's text. */
  readonly warning?: string;
}
