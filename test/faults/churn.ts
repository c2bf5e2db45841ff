/**
 * A create/delete churn with a fault in the middle, shared by the agent-kill and Redis-flush tests:
 *
 *   create `initial` pods in batches ──► once `runningBeforeFault` run: inject the fault (creation
 *        │                                  may still be going on) and record every sandbox and
 *        │                                  container of the namespace in the runtime, any state
 *        │                                  (see `ChurnFault.recordRuntime` for when)
 *        └─► delete `toDelete` of them, create `extra` more ──► recover ──► caller waits for convergence
 *
 * Every pod is a busybox `sleep 3600` bound to the test node with a 2 s grace period.
 */
import { NODE_NAME, eventually, kubectl } from '../e2e/helpers.js';
import type { Expectation } from './census.js';
import { listPods, runningContainers, runtimeOfNamespace, type RunningContainer, type RuntimeView } from './state.js';

export interface ChurnPlan {
  readonly namespace: string;
  /** Pods created before and while the fault is injected. */
  readonly initial: number;
  /** Pods per `kubectl create`; batches are `batchPauseMs` apart. */
  readonly batchSize: number;
  readonly batchPauseMs: number;
  /** The fault is injected once this many pods are Running. */
  readonly runningBeforeFault: number;
  /** Pods deleted after the fault (two of every five initial pods, so running and starting ones alike). */
  readonly toDelete: number;
  /** Pods created after the deletions. */
  readonly extra: number;
}

/** The fault: what breaks, and how the test brings it back. */
export interface ChurnFault {
  inject(): Promise<void>;
  recover(): Promise<void>;
  /**
   * When the runtime's state at the fault is recorded: `after-inject` (the default) right after
   * `inject`; `before-inject` when the fault takes the runtime away (containerd killed) and nothing
   * could read it after; `before-recover` when the fault kills the agent: calls it had in flight
   * still complete in the runtime after its death (a container made by a CreateContainer the kill
   * interrupted), and nothing else changes the runtime until `recover`, so the reading right before
   * it is what the dead agent left.
   */
  readonly recordRuntime?: 'after-inject' | 'before-inject' | 'before-recover';
}

export interface ChurnOutcome {
  readonly expectation: Expectation;
  /** How many pods the API showed Running right before the fault was injected. */
  readonly runningBeforeFault: number;
  /** The runtime at the fault (see `ChurnFault.recordRuntime`): every sandbox and container of the namespace, any state. */
  readonly atFault: RuntimeView;
  /** How long the recovery took (`fault.recover()`), in milliseconds. */
  readonly recoverMs: number;
  /** When the recovery ended (`Date.now()`), to time convergence from. */
  readonly recoveredAtMs: number;
}

/** A busybox `sleep 3600` pod bound to the test node. */
export function sleeperPod(namespace: string, name: string, restartPolicy = 'Always'): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { app: 'faults' } },
    spec: {
      nodeName: NODE_NAME,
      restartPolicy,
      terminationGracePeriodSeconds: 2,
      containers: [{ name: 'main', image: 'busybox:1.35', command: ['sleep', '3600'] }],
    },
  };
}

/** Creates the pods with one `kubectl create` per batch, pausing between batches. */
export async function createInBatches(namespace: string, names: readonly string[], options: { batchSize: number; pauseMs: number }): Promise<void> {
  for (let i = 0; i < names.length; i += options.batchSize) {
    if (i > 0) await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
    const items = names.slice(i, i + options.batchSize).map((name) => sleeperPod(namespace, name));
    await kubectl(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
  }
}

function podNames(prefix: string, from: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}-${String(from + i).padStart(2, '0')}`);
}

async function waitForRunning(namespace: string, count: number): Promise<RunningContainer[]> {
  return eventually(`${count} pods of ${namespace} to run`, async () => {
    const running = runningContainers(await listPods(namespace));
    return running.length >= count ? running : undefined;
  }, 180_000);
}

/** Runs the churn around `fault`; returns what the namespace must converge to. */
export async function churnThrough(plan: ChurnPlan, fault: ChurnFault): Promise<ChurnOutcome> {
  const initial = podNames('p', 0, plan.initial);
  // Creation goes on in the background while the fault is injected; its error is kept for later.
  const creating = createInBatches(plan.namespace, initial, { batchSize: plan.batchSize, pauseMs: plan.batchPauseMs }).then(
    () => undefined,
    (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
  );
  const runningBefore = await waitForRunning(plan.namespace, plan.runningBeforeFault);
  const record = fault.recordRuntime ?? 'after-inject';
  const beforeFault = record === 'before-inject' ? await runtimeOfNamespace(plan.namespace) : undefined;
  await fault.inject();
  const afterInject = record === 'after-inject' ? await runtimeOfNamespace(plan.namespace) : undefined;
  const creationError = await creating;
  if (creationError !== undefined) throw creationError;

  const doomed = initial.filter((_, i) => i % 5 < 2).slice(0, plan.toDelete);
  const uidByName = new Map((await listPods(plan.namespace)).map((p) => [p.metadata?.name ?? '', p.metadata?.uid ?? '']));
  await kubectl(['delete', 'pod', '-n', plan.namespace, '--wait=false', ...doomed]);
  const extra = podNames('q', 0, plan.extra);
  await createInBatches(plan.namespace, extra, { batchSize: plan.batchSize, pauseMs: 0 });
  const atFault = beforeFault ?? afterInject ?? (await runtimeOfNamespace(plan.namespace));
  const recoverStartMs = Date.now();
  await fault.recover();
  const recoveredAtMs = Date.now();

  const gone = new Set(doomed);
  return {
    expectation: {
      namespace: plan.namespace,
      present: [...initial.filter((name) => !gone.has(name)), ...extra],
      deletedUids: doomed.map((name) => uidByName.get(name) ?? ''),
    },
    runningBeforeFault: runningBefore.length,
    atFault,
    recoverMs: recoveredAtMs - recoverStartMs,
    recoveredAtMs,
  };
}
