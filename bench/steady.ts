/**
 * A steady load on one agent's node: one pod created every second for a while (on a fixed
 * schedule, not drifting with the API's answers), each deleted once it has run and `lifeMs` has
 * passed since its create, so about lifeMs / 1000 pods run at once. Per pod: create → Running;
 * the agent's CPU over the whole run (creates, deletes and the drain after the last create).
 */
import { performance } from 'node:perf_hooks';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { cpuSeconds } from './agent-process.js';
import type { AgentNode } from './agent-node.js';
import { SLEEPER_SCRIPT, benchPod, createNamespace, deleteAndWait, pause, waitUntil } from './agent-startup.js';
import { PodTracker } from './pod-tracker.js';

export interface SteadyOptions {
  readonly kubeConfig: KubeConfig;
  readonly node: AgentNode;
  readonly durationMs: number;
  readonly lifeMs: number;
  readonly timeoutMs: number;
  readonly log: (line: string) => void;
}

export interface SteadyResult {
  /** Per pod, create → Running. */
  readonly latenciesMs: number[];
  readonly cpuSeconds: number;
}

const INTERVAL_MS = 1000;

/** Deletes, once, every pod that has run and is older than `lifeMs`. */
function deleteDue(state: { tracker: PodTracker; createdAt: Map<string, number>; deleting: Set<string>; lifeMs: number }, remove: (name: string) => Promise<unknown>): Promise<unknown>[] {
  const now = performance.now();
  const due = [...state.createdAt].filter(([name, at]) => !state.deleting.has(name) && state.tracker.runningAt.has(name) && now - at >= state.lifeMs);
  return due.map(([name]) => {
    state.deleting.add(name);
    return remove(name);
  });
}

export async function benchSteady(options: SteadyOptions): Promise<SteadyResult> {
  const { kubeConfig, node, durationMs, lifeMs, timeoutMs, log } = options;
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const namespace = await createNamespace(core, `${node.target}-steady`);
  const tracker = new PodTracker(kubeConfig, namespace);
  await tracker.start();
  const state = { tracker, createdAt: new Map<string, number>(), deleting: new Set<string>(), lifeMs };
  const pending: Promise<unknown>[] = [];
  const remove = (name: string): Promise<unknown> => core.deleteNamespacedPod({ name, namespace });
  try {
    const count = Math.max(1, Math.floor(durationMs / INTERVAL_MS));
    log(`${node.target}: steady 1 pod/s for ${count} s in ${namespace}`);
    const cpu0 = await cpuSeconds(node.pid);
    const start = performance.now();
    for (let i = 0; i < count; i++) {
      await pause(Math.max(0, start + i * INTERVAL_MS - performance.now()));
      const name = `steady-${String(i).padStart(4, '0')}`;
      state.createdAt.set(name, performance.now());
      pending.push(core.createNamespacedPod({ namespace, body: benchPod({ namespace, name, nodeName: node.nodeName, script: SLEEPER_SCRIPT, restartPolicy: 'Always' }) }));
      pending.push(...deleteDue(state, remove));
    }
    await waitUntil(`${count} steady pods Running`, () => tracker.runningAt.size >= count, timeoutMs);
    await Promise.all(pending);
    const names = [...state.createdAt.keys()];
    const latenciesMs = names.map((name) => (tracker.runningAt.get(name) ?? Number.NaN) - (state.createdAt.get(name) ?? Number.NaN));
    // The rest at once (deleteAndWait deletes again only what is still there).
    const rest = names.filter((name) => !state.deleting.has(name));
    await deleteAndWait({ core, node, tracker, namespace, names: rest, timeoutMs });
    await waitUntil(`every steady pod gone from the API`, () => names.every((n) => tracker.deletedAt.has(n)), timeoutMs);
    return { latenciesMs, cpuSeconds: (await cpuSeconds(node.pid)) - cpu0 };
  } finally {
    tracker.stop();
    await Promise.allSettled(pending);
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  }
}
