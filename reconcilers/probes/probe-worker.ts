/**
 * One probe of one container, run on its period (the kubelet's prober worker). Each tick reads the
 * desired pod and the last status the status manager holds, decides with the pure functions of
 * `probe-worker-state.ts`, runs the probe when due, and hands every published result to the sinks:
 * readiness and startup go to the status manager's narrow entry point (the API sees them within a
 * tick, no queued reconcile), liveness and startup failures are recorded for the next reconcile,
 * which the worker requests.
 */
import type { V1Container, V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { RuntimeService } from '../../cri/types.js';
import type { Clock } from '../../util/clock.js';
import { createPeriodicLoop, type PeriodicLoop } from '../../util/periodic-loop.js';
import type { PodKey } from '../../util/pod-key.js';
import { containerFieldPath, type EventRecorder } from '../events/event-recorder.js';
import { criContainerId } from './container-readiness.js';
import type { ProbeFailures } from './probe-failures.js';
import type { ProbeSettings } from './probe-spec.js';
import { applyResult, decideTick, INITIAL_WORKER_STATE, type ProbeResult, type ProbeTargetView, type ProbeWorkerState } from './probe-worker-state.js';
import { runProbe } from './run-probe.js';
import type { ProbeOutcome } from './probe-outcome.js';
import type { PodEventSink } from '../model/pod-event.js';
import type { ProbeMetrics, ProbeSeries } from './probe-metrics.js';
import { containerShouldRestart } from '../model/restart-policy.js';
import { shouldAllContainersRestart } from '../model/restart-all.js';

/** Where probe results go. */
export interface ProbeSinks {
  setContainerReadiness(key: PodKey, containerId: string, ready: boolean): Promise<void>;
  setContainerStartup(key: PodKey, containerId: string, started: boolean): Promise<void>;
  readonly failures: ProbeFailures;
  /** Told what asks for a reconcile of the pod (a liveness failure to act on, a container that started). */
  readonly podEvents: PodEventSink;
}

/** What a worker reads on each tick. */
export interface ProbeInputs {
  desiredPod(uid: string): V1Pod | undefined;
  podStatus(uid: string): V1PodStatus | undefined;
}

export interface ProbeWorkerDeps {
  readonly runtime: RuntimeService;
  readonly inputs: ProbeInputs;
  readonly sinks: ProbeSinks;
  readonly events: EventRecorder;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The node's `/metrics/probes`; absent: not counted. */
  readonly metrics?: ProbeMetrics | undefined;
}

const CAPITALIZED: Readonly<Record<ProbeSettings['type'], string>> = { liveness: 'Liveness', readiness: 'Readiness', startup: 'Startup' };

function statusOf(status: V1PodStatus, name: string): V1ContainerStatus | undefined {
  return [...(status.containerStatuses ?? []), ...(status.initContainerStatuses ?? [])].find((c) => c.name === name && c.containerID !== undefined);
}

/** The pod's container (regular or init) named `name`. */
function containerSpecOf(pod: V1Pod, name: string): V1Container | undefined {
  return [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].find((c) => c.name === name);
}

/**
 * Whether the pod's container `name` runs again after exiting with `exitCode`: by its restart
 * policy, or because the pod restarts all its containers in place (as the kubelet's prober
 * worker asks `ShouldAllContainersRestart` of the status it reads).
 */
function restartsAfter(pod: V1Pod, status: V1PodStatus, c: { name: string; exitCode: number }): boolean {
  const spec = containerSpecOf(pod, c.name);
  return spec !== undefined && (containerShouldRestart(spec, pod.spec, c.exitCode) || shouldAllContainersRestart(pod, undefined, status));
}

function containerView(pod: V1Pod, status: V1PodStatus, c: V1ContainerStatus & { containerID: string }): NonNullable<ProbeTargetView['container']> {
  const running = c.state?.running;
  const terminated = c.state?.terminated;
  const startedAt = running?.startedAt === undefined ? undefined : new Date(running.startedAt).getTime();
  const state = running !== undefined ? 'running' : terminated !== undefined ? 'terminated' : 'waiting';
  const restarts = terminated === undefined ? {} : { restarts: restartsAfter(pod, status, { name: c.name, exitCode: terminated.exitCode }) };
  return { id: criContainerId(c.containerID), state, ...(startedAt === undefined ? {} : { startedAtMs: startedAt }), started: c.started === true, ...restarts };
}

/** The worker's view of its container on one tick. */
export function targetView(pod: V1Pod, status: V1PodStatus, containerName: string, times: { readonly nowMs: number; readonly agentStartedAtMs?: number | undefined }): ProbeTargetView {
  const { nowMs, agentStartedAtMs } = times;
  const c = statusOf(status, containerName);
  const base = {
    nowMs,
    podTerminal: status.phase === 'Succeeded' || status.phase === 'Failed',
    podDeleting: pod.metadata?.deletionTimestamp !== undefined,
    ...(agentStartedAtMs === undefined ? {} : { agentStartedAtMs }),
  };
  return c?.containerID === undefined ? base : { ...base, container: containerView(pod, status, { ...c, containerID: c.containerID }) };
}

export class ProbeWorker {
  private state: ProbeWorkerState = INITIAL_WORKER_STATE;
  private readonly loop: PeriodicLoop;
  private stopped = false;

  constructor(
    private readonly deps: ProbeWorkerDeps,
    private readonly target: { readonly key: PodKey; readonly containerName: string; readonly settings: ProbeSettings; readonly agentStartedAtMs?: number; readonly onStop: () => void },
  ) {
    this.loop = createPeriodicLoop({
      name: `${target.settings.type} probe ${target.key.namespace}/${target.key.name}/${target.containerName}`,
      periodMs: target.settings.periodMs,
      clock: deps.clock,
      logger: deps.logger,
      run: () => this.tick(),
    });
  }

  start(): void {
    this.loop.start();
  }

  /** Stops probing; resolves when a probe in flight has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop.stop();
    this.deps.metrics?.forget(this.series());
  }

  /** The worker's `/metrics/probes` series. */
  private series(): ProbeSeries {
    const { key, containerName, settings } = this.target;
    return { probeType: CAPITALIZED[settings.type], container: containerName, pod: key.name, namespace: key.namespace, podUid: key.uid };
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    const { key, containerName, settings } = this.target;
    const pod = this.deps.inputs.desiredPod(key.uid);
    const status = this.deps.inputs.podStatus(key.uid);
    if (pod === undefined) {
      this.end();
      return;
    }
    if (status === undefined) return;
    const view = targetView(pod, status, containerName, { nowMs: this.deps.clock.now(), agentStartedAtMs: this.target.agentStartedAtMs });
    const tick = decideTick(settings, this.state, view);
    const containerId = view.container?.id ?? '';
    if (tick.publish !== undefined) await this.publish(tick.publish, containerId);
    if (tick.kind === 'stop') {
      this.end();
      return;
    }
    this.state = tick.state;
    if (tick.kind === 'probe') await this.probe(pod, status, containerId);
  }

  /** Runs the probe once and folds its result in; a threshold reached publishes it. */
  private async probe(pod: V1Pod, status: V1PodStatus, containerId: string): Promise<void> {
    const { containerName, settings } = this.target;
    const spec = containerSpecOf(pod, containerName);
    if (spec === undefined) {
      this.end();
      return;
    }
    const startedMs = this.deps.clock.now();
    const outcome = await runProbe({ runtime: this.deps.runtime }, settings, { containerId, container: spec, podIp: status.podIP ?? '' });
    this.deps.metrics?.probed(this.series(), outcome.result, (this.deps.clock.now() - startedMs) / 1000);
    if (outcome.result !== 'success') this.recordUnhealthy(pod, outcome);
    if (outcome.warning !== undefined) this.recordWarning(pod, outcome.warning);
    const applied = applyResult(settings, this.state, outcome.result);
    this.state = applied.state;
    if (applied.publish !== undefined) await this.publish(applied.publish, containerId);
  }

  private end(): void {
    this.stopped = true;
    this.deps.metrics?.forget(this.series());
    this.target.onStop();
  }

  private recordUnhealthy(pod: V1Pod, outcome: ProbeOutcome): void {
    const type = CAPITALIZED[this.target.settings.type];
    const message = outcome.result === 'unknown' ? `${type} probe errored: ${outcome.output}` : `${type} probe failed: ${outcome.output}`;
    this.deps.events.record(pod, { type: 'Warning', reason: 'Unhealthy', message, fieldPath: containerFieldPath(pod, this.target.containerName) });
  }

  /** The kubelet's ProbeWarning event: "<Type> probe warning: <text>" (a success all the same). */
  private recordWarning(pod: V1Pod, warning: string): void {
    const message = `${CAPITALIZED[this.target.settings.type]} probe warning: ${warning}`;
    this.deps.events.record(pod, { type: 'Warning', reason: 'ProbeWarning', message, fieldPath: containerFieldPath(pod, this.target.containerName) });
  }

  private async publish(result: ProbeResult, containerId: string): Promise<void> {
    const { key, settings } = this.target;
    const { sinks } = this.deps;
    if (containerId === '') return;
    if (settings.type === 'readiness') {
      await sinks.setContainerReadiness(key, containerId, result === 'success');
      return;
    }
    if (settings.type === 'startup') {
      await sinks.setContainerStartup(key, containerId, result === 'success');
      // What waits for this container to start (the next sidecar, the app containers) may go now.
      if (result === 'success') sinks.podEvents.emit({ kind: 'probe-result', key, probe: 'startup', result: 'succeeded' });
    }
    if (result === 'failure') {
      sinks.failures.record(key.uid, containerId, { type: settings.type, ...(settings.terminationGracePeriodSeconds === undefined ? {} : { gracePeriodSeconds: settings.terminationGracePeriodSeconds }) });
      sinks.podEvents.emit({ kind: 'probe-result', key, probe: settings.type, result: 'failed' });
    } else if (result === 'success') {
      sinks.failures.clear(key.uid, containerId);
    }
  }
}
