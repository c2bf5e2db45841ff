/**
 * Runs in flight in this process that a newer event may cancel. The kubelet's pod worker cancels
 * the context of a sync in progress when the pod starts terminating (`UpdatePod`): a sync held up by
 * a long step (a liveness kill waiting out a huge grace period, an image pull, a hook) must not hold
 * back the pod's deletion. Here the queue's runner opens a run per UID, and whoever learns that the
 * run's work is moot (see `reconcilers/lifecycle/sync-preemption.ts`) preempts it: the run's signal
 * aborts with a {@link RunPreemptedError}, and the queue runs the UID again at once.
 */

/** The abort reason of a preempted run. */
export class RunPreemptedError extends Error {
  constructor(readonly why: string) {
    super(`reconcile preempted: ${why}`);
    this.name = 'RunPreemptedError';
  }
}

export function isRunPreemptedError(err: unknown): err is RunPreemptedError {
  return err instanceof RunPreemptedError;
}

/** One run of a UID that `preempt` can cancel. */
export interface PreemptibleRun {
  /** Aborts when the run is preempted. */
  readonly signal: AbortSignal;
  /** The run settled: it can no longer be preempted. */
  end(): void;
}

/** The preemptible runs of this process, at most one per UID (the runner serializes a UID's runs). */
export class RunPreemption {
  private readonly runs = new Map<string, AbortController>();

  /** Opens the run of `uid`; call `end()` once it settled. */
  begin(uid: string): PreemptibleRun {
    const controller = new AbortController();
    this.runs.set(uid, controller);
    return {
      signal: controller.signal,
      end: () => {
        if (this.runs.get(uid) === controller) this.runs.delete(uid);
      },
    };
  }

  /** Cancels the run of `uid` in flight, if any; true when one was cancelled now. */
  preempt(uid: string, why: string): boolean {
    const controller = this.runs.get(uid);
    if (controller === undefined || controller.signal.aborted) return false;
    controller.abort(new RunPreemptedError(why));
    return true;
  }

  /** Whether `uid` has a run open in this process. */
  inFlight(uid: string): boolean {
    return this.runs.has(uid);
  }

  /** UIDs with a run open. */
  get size(): number {
    return this.runs.size;
  }
}
