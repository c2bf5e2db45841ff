/**
 * The prober manager: one worker per probe of every container and sidecar of every pod on the node
 * (the kubelet's prober manager). A per-pod manager on the pod lifecycle:
 *
 * - `podAdmitted`: workers for every liveness, readiness and startup probe of the pod's app
 *   containers and sidecars (regular init containers cannot have probes). After an agent restart
 *   the first reconcile admits running pods again, so their probes resume. Workers created soon
 *   after the agent started wait a random part of their period first, so a restart does not fire
 *   every probe at once.
 * - `podTerminated` / `podForgotten`: every worker of the pod stops.
 *
 * A probe nodelet cannot run (no action, or two) is reported as an `Unhealthy` event and gets no
 * worker: its container then stays not ready (or not started), visibly, never silently ready.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { TimerHandle } from '../../util/clock.js';
import type { PodKey } from '../../util/pod-key.js';
import { containerFieldPath } from '../events/event-recorder.js';
import { isSidecar } from '../model/sidecar.js';
import type { PodLifecycleObserver } from '../lifecycle/observer.js';
import { containerProbes, isInvalidProbeError, type ProbeSettings } from './probe-spec.js';
import { ProbeWorker, type ProbeWorkerDeps } from './probe-worker.js';

/** What every worker is given, and the start spread. */
export interface ProberManagerOptions extends ProbeWorkerDeps {
  /** A number in [0, 1) for the start spread; default Math.random. */
  readonly random?: () => number;
}

interface PodWorkers {
  readonly workers: Map<string, ProbeWorker>;
  readonly timers: Set<TimerHandle>;
}

/** The containers that may have probes: app containers and sidecars. */
function probedContainers(pod: V1Pod): V1Container[] {
  return [...(pod.spec?.initContainers ?? []).filter(isSidecar), ...(pod.spec?.containers ?? [])];
}

export class ProberManager implements PodLifecycleObserver {
  private readonly pods = new Map<string, PodWorkers>();
  private readonly startedAt: number;

  constructor(private readonly options: ProberManagerOptions) {
    this.startedAt = options.clock.now();
  }

  /** When this manager (the agent) started: containers running before it are ones the agent found. */
  startedAtMs(): number {
    return this.startedAt;
  }

  /** Probe workers running, for tests and the agent's self-report. */
  workerCount(): number {
    let n = 0;
    for (const pod of this.pods.values()) n += pod.workers.size;
    return n;
  }

  podAdmitted(key: PodKey): void {
    const pod = this.options.inputs.desiredPod(key.uid);
    if (pod === undefined || this.pods.has(key.uid)) return;
    const entry: PodWorkers = { workers: new Map(), timers: new Set() };
    this.pods.set(key.uid, entry);
    for (const container of probedContainers(pod)) {
      for (const settings of this.settingsOf(pod, container)) this.addWorker(key, entry, { container: container.name, settings });
    }
  }

  podTerminated(key: PodKey): void {
    void this.stopPod(key.uid);
  }

  podForgotten(key: PodKey): void {
    void this.stopPod(key.uid);
  }

  /** Stops every worker (agent shutdown). */
  async stopAll(): Promise<void> {
    await Promise.all([...this.pods.keys()].map((uid) => this.stopPod(uid)));
  }

  private settingsOf(pod: V1Pod, container: V1Container): ProbeSettings[] {
    try {
      return containerProbes(container);
    } catch (error) {
      if (!isInvalidProbeError(error)) throw error;
      this.options.events.record(pod, { type: 'Warning', reason: 'Unhealthy', message: `Probe not run: ${error.message}`, fieldPath: containerFieldPath(pod, container.name) });
      return [];
    }
  }

  private addWorker(key: PodKey, entry: PodWorkers, w: { container: string; settings: ProbeSettings }): void {
    const id = `${w.container}/${w.settings.type}`;
    const worker = new ProbeWorker(
      { ...this.options, logger: this.options.logger.child({ podUID: key.uid, container: w.container, probe: w.settings.type }) },
      {
        key,
        containerName: w.container,
        settings: w.settings,
        agentStartedAtMs: this.startedAt,
        onStop: () => {
          if (entry.workers.get(id) === worker) entry.workers.delete(id);
          void worker.stop();
        },
      },
    );
    entry.workers.set(id, worker);
    const { clock } = this.options;
    const sinceStart = clock.now() - this.startedAt;
    if (sinceStart >= w.settings.periodMs) {
      worker.start();
      return;
    }
    const timer = clock.setTimeout(() => {
      entry.timers.delete(timer);
      worker.start();
    }, Math.floor((this.options.random ?? Math.random)() * w.settings.periodMs));
    entry.timers.add(timer);
  }

  private async stopPod(uid: string): Promise<void> {
    const entry = this.pods.get(uid);
    if (entry === undefined) return;
    this.pods.delete(uid);
    for (const timer of entry.timers) this.options.clock.clearTimeout(timer);
    await Promise.all([...entry.workers.values()].map((w) => w.stop()));
  }
}
