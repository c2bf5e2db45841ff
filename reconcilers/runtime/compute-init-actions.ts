/**
 * Init containers, as the kubelet runs them (computeInitContainerActions): one at a time in spec
 * order, each to success before the next; sidecars (init containers with `restartPolicy: Always`)
 * are started in their place in that order, are not waited on to finish, keep running beside the
 * app containers, and are restarted whenever they exit.
 *
 * - A regular init container that exited 0 is done; one that is running is waited on; one that
 *   failed is restarted if its restart policy says so (its `restartPolicyRules` on the exit code,
 *   its own `restartPolicy`, else the pod's: `model/restart-policy.ts`); if not, the pod has failed.
 * - Until every regular init container has succeeded, no app container starts.
 * - Once the pod is initialized (it has app containers), a sidecar that exits is restarted without
 *   holding anything else back.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { hashContainerSpec } from '../model/container-hash.js';
import { isSidecar } from '../model/sidecar.js';
import { containerShouldRestart } from '../model/restart-policy.js';
import type { ContainerToKill, ContainerToStart } from './pod-actions.js';
import type { ProbeVerdicts } from '../probes/probe-verdicts.js';
import { latestContainer, nextRestartCount, type ObservedPod } from '../model/observed-pod.js';

export interface InitActions {
  readonly containersToStart: readonly ContainerToStart[];
  readonly containersToKill: readonly ContainerToKill[];
  /** Every regular init container has succeeded (app containers may start). */
  readonly initialized: boolean;
  /** A regular init container failed and its restart policy does not restart it: the pod has failed. */
  readonly failed: boolean;
  /** Init containers (sidecars or a running init container) that are running and stay. */
  readonly keepRunning: number;
}

/** What the init decisions look at besides the pod and the runtime. */
export interface InitInputs {
  readonly probes?: ProbeVerdicts;
  /** The restart count the log directory gives each container the runtime has no instance of. */
  readonly logRestartCounts?: ReadonlyMap<string, number>;
}

function start(ctx: Pick<StepContext, 'observed' | 'logRestartCounts'>, container: V1Container, index: number, reason: string): ContainerToStart {
  return { kind: 'init', index, name: container.name, reason, restartCount: nextRestartCount(ctx.observed, container.name, ctx.logRestartCounts) };
}

/**
 * Whether an app container has been created in the current sandbox (the newest, when ready): the
 * pod was initialized in it, as the kubelet's HasAnyActiveRegularContainerStarted (1.37). An app
 * container of an earlier sandbox (a reboot, a sandbox replaced) does not count: the init
 * containers run again in the new one.
 */
export function hasActiveAppContainers(pod: V1Pod, observed: ObservedPod): boolean {
  const active = observed.sandboxes[0];
  if (active?.state !== 'SANDBOX_READY') return false;
  const names = new Set((pod.spec?.containers ?? []).map((c) => c.name));
  return observed.containers.some((c) => names.has(c.name) && c.sandboxId === active.id);
}

interface Accumulator {
  starts: ContainerToStart[];
  kills: ContainerToKill[];
  keepRunning: number;
}

/** What every step looks at and adds to. */
interface StepContext {
  readonly pod: V1Pod;
  readonly observed: ObservedPod;
  readonly acc: Accumulator;
  /** The pod has started app containers before (it was initialized in this sandbox). */
  readonly initializedBefore: boolean;
  readonly probes: ProbeVerdicts;
  readonly logRestartCounts: ReadonlyMap<string, number> | undefined;
}

/** A sidecar's turn: keep it running, or (re)start it. Returns whether later containers must wait. */
function sidecarStep(ctx: StepContext, container: V1Container, index: number): boolean {
  const { observed, acc, initializedBefore } = ctx;
  const latest = latestContainer(observed, container.name);
  const failure = latest === undefined ? undefined : ctx.probes.failures.get(latest.id);
  if (latest?.state === 'CONTAINER_RUNNING' && latest.specHash === hashContainerSpec(container) && failure === undefined) {
    acc.keepRunning++;
    // A sidecar with a startup probe holds back what follows it until the probe succeeds.
    return !initializedBefore && ctx.probes.notStarted.has(latest.id);
  }
  if (latest?.state === 'CONTAINER_RUNNING' && failure !== undefined) {
    const what = `Container ${container.name} failed ${failure.type} probe`;
    acc.kills.push({
      id: latest.id,
      name: container.name,
      reason: `failed ${failure.type} probe`,
      eventMessage: `${what}, will be restarted`,
      ...(failure.gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds: failure.gracePeriodSeconds }),
    });
    acc.starts.push(start(ctx, container, index, `failed ${failure.type} probe`));
    return !initializedBefore;
  }
  if (latest !== undefined && latest.state !== 'CONTAINER_EXITED') {
    acc.kills.push({ id: latest.id, name: container.name, reason: latest.state === 'CONTAINER_RUNNING' ? 'container spec changed' : 'container not running' });
  }
  acc.starts.push(start(ctx, container, index, latest === undefined ? 'sidecar never started' : 'sidecar is not running'));
  // Before initialization, nothing after a sidecar starts until it has started.
  return !initializedBefore;
}

type InitStep = 'done' | 'wait' | 'failed';

/** A regular init container's turn. */
function initStep(ctx: StepContext, container: V1Container, index: number): InitStep {
  const { pod, observed, acc } = ctx;
  const latest = latestContainer(observed, container.name);
  if (latest === undefined) {
    acc.starts.push(start(ctx, container, index, 'init container never started'));
    return 'wait';
  }
  switch (latest.state) {
    case 'CONTAINER_EXITED':
      if (latest.exitCode === 0) return 'done';
      if (!containerShouldRestart(container, pod.spec, latest.exitCode)) return 'failed';
      acc.starts.push(start(ctx, container, index, 'init container failed'));
      return 'wait';
    case 'CONTAINER_RUNNING':
      acc.keepRunning++;
      return 'wait';
    case 'CONTAINER_CREATED':
    case 'CONTAINER_UNKNOWN':
      acc.kills.push({ id: latest.id, name: container.name, reason: 'init container not running' });
      acc.starts.push(start(ctx, container, index, 'init container not running'));
      return 'wait';
  }
}

/** Decides the init containers' part of a reconcile. Pure. */
export function computeInitActions(pod: V1Pod, observed: ObservedPod, inputs: InitInputs = {}): InitActions {
  const acc: Accumulator = { starts: [], kills: [], keepRunning: 0 };
  const initializedBefore = hasActiveAppContainers(pod, observed);
  const probes = inputs.probes ?? { failures: new Map(), notStarted: new Set() };
  const ctx: StepContext = { pod, observed, acc, initializedBefore, probes, logRestartCounts: inputs.logRestartCounts };
  const inits = pod.spec?.initContainers ?? [];
  for (const [index, container] of inits.entries()) {
    if (isSidecar(container)) {
      if (sidecarStep(ctx, container, index)) return { ...result(acc), initialized: false, failed: false };
      continue;
    }
    const step = initStep(ctx, container, index);
    if (step === 'failed') return { ...result(acc), initialized: false, failed: true };
    // A regular init container that already succeeded before the app containers started stays done.
    if (step === 'wait' && !initializedBefore) return { ...result(acc), initialized: false, failed: false };
    if (step === 'wait') {
      // Initialized earlier in this sandbox: never run init containers again (their exits were GC'd or replaced).
      acc.starts = acc.starts.filter((s) => s.name !== container.name);
    }
  }
  return { ...result(acc), initialized: true, failed: false };
}

function result(acc: Accumulator): Omit<InitActions, 'initialized' | 'failed'> {
  return { containersToStart: acc.starts, containersToKill: acc.kills, keepRunning: acc.keepRunning };
}

/** What starts with a new sandbox when the pod has init containers: the first of them; the rest follow in order. */
export function initContainersForNewSandbox(pod: V1Pod, observed: ObservedPod, logRestartCounts?: ReadonlyMap<string, number>): ContainerToStart[] {
  const first = pod.spec?.initContainers?.[0];
  return first === undefined ? [] : [start({ observed, logRestartCounts }, first, 0, 'sandbox recreated')];
}
