/**
 * The queue's concurrency as one budget for every reconcile of this process: the Worker's jobs
 * (BullMQ caps how many it takes at once) and the resync's runs without a job (which BullMQ never
 * sees) take a slot while they run, so no more than `concurrency` different UIDs reconcile at once,
 * whoever started them. Slots are handed out in request order; a run takes its slot only once its
 * UID's previous run ended (inside the per-UID guard), so a run waiting for its UID holds none and
 * waiting cannot deadlock.
 */

/** A resizable counting semaphore (the live `concurrency` setting). */
export class RunSlots {
  private busy = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private capacity: number) {}

  /** Runs `work` once a slot is free; the slot is given back when it settles. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.busy >= this.capacity) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.busy += 1;
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  /** Changes the number of slots; more start waiting runs at once, fewer take effect as runs end. */
  setCapacity(capacity: number): void {
    this.capacity = capacity;
    while (this.busy < this.capacity && this.waiting.length > 0) {
      this.busy += 1;
      this.waiting.shift()?.();
    }
  }

  /** Runs holding a slot now. */
  get running(): number {
    return this.busy;
  }

  private release(): void {
    // A waiting run inherits the slot, unless the capacity shrank below what is running.
    const next = this.busy <= this.capacity ? this.waiting.shift() : undefined;
    if (next === undefined) this.busy -= 1;
    else next();
  }
}
