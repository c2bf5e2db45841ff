/**
 * Samples the node's Ready condition once a second in the background, so a fault test can say how
 * long the node was not Ready around a fault.
 */
import { nodeReadyStatus } from './state.js';

export interface ReadySample {
  readonly atMs: number;
  readonly status: string;
}

export class ReadinessSampler {
  readonly samples: ReadySample[] = [];
  private running = false;
  private loop: Promise<void> = Promise.resolve();

  start(intervalMs = 1000): void {
    this.running = true;
    this.loop = (async () => {
      while (this.running) {
        const status = await nodeReadyStatus();
        this.samples.push({ atMs: Date.now(), status });
        await new Promise((resolve) => setTimeout(resolve, intervalMs));
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  /** The longest run of samples that were not `True`, in milliseconds (0 if the node was always Ready). */
  longestNotReadyMs(): number {
    let longest = 0;
    let since: number | undefined;
    for (const sample of this.samples) {
      if (sample.status === 'True') {
        if (since !== undefined) longest = Math.max(longest, sample.atMs - since);
        since = undefined;
      } else {
        since ??= sample.atMs;
      }
    }
    const last = this.samples.at(-1);
    if (since !== undefined && last !== undefined) longest = Math.max(longest, last.atMs - since);
    return longest;
  }

  /** Statuses in order with repeats collapsed, e.g. `True → False → True`. */
  transitions(): string {
    return this.samples
      .map((s) => s.status)
      .filter((status, i, all) => i === 0 || all[i - 1] !== status)
      .join(' → ');
  }
}
