/**
 * The nodelet side of the pod-startup benchmark: N pods created through the API at once, in a
 * namespace of their own, bound to the node; create → Running as seen by a watch; then all deleted
 * at once, delete → gone when every pod object is gone from the API and no sandbox of theirs is
 * left in the runtime. The agent's CPU time and peak RSS are taken over both phases.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import type { RuntimeService } from '../cri/types.js';
import { RssSampler, cpuSeconds, rssBytes } from './agent-process.js';
import { PodTracker } from './pod-tracker.js';
import { summarize, type LatencySummary } from './stats.js';

/** The container's script: `sleep 3600`, ending at once on SIGTERM so deletion measures the agent, not a grace period. */
export const SLEEPER_SCRIPT = 'trap "exit 0" TERM; sleep 3600 & wait';
export const BENCH_IMAGE = 'docker.io/library/busybox:1.35';

export interface NodeletRunOptions {
  readonly kubeConfig: KubeConfig;
  readonly runtime: RuntimeService;
  readonly nodeName: string;
  readonly agentPid: number;
  readonly count: number;
  /** Gives up waiting for a phase after this long. */
  readonly timeoutMs: number;
  readonly log: (line: string) => void;
}

export interface NodeletRunResult {
  readonly count: number;
  readonly create: LatencySummary;
  /** Per pod: delete issued → object gone from the API. */
  readonly deleteApi: LatencySummary;
  /** Delete issued → every object gone from the API and every sandbox from the runtime. */
  readonly deleteAllGoneMs: number;
  readonly cpuSecondsCreate: number;
  readonly cpuSecondsDelete: number;
  readonly peakRssBytes: number;
  readonly rssBeforeBytes: number;
}

function benchPod(namespace: string, name: string, nodeName: string): V1Pod {
  return {
    metadata: { name, namespace, labels: { app: 'bench-pod-startup' } },
    spec: {
      nodeName,
      restartPolicy: 'Always',
      // The benchmark measures the agent's work for a pod, not a token request per pod.
      automountServiceAccountToken: false,
      containers: [{ name: 'main', image: BENCH_IMAGE, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', SLEEPER_SCRIPT] }],
    },
  };
}

async function waitUntil(what: string, done: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function createNamespace(core: CoreV1Api, count: number): Promise<string> {
  const namespace = `bench-${count}-${randomBytes(3).toString('hex')}`;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  // Pods are admitted only once the namespace's default service account exists.
  await waitUntil(`service account default in ${namespace}`, () => core.readNamespacedServiceAccount({ name: 'default', namespace }).then(() => true, () => false), 60_000);
  return namespace;
}

/** Sandboxes of the namespace's pods still in the runtime. */
async function sandboxesLeft(runtime: RuntimeService, namespace: string): Promise<number> {
  return (await runtime.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.namespace': namespace } })).length;
}

/** Runs one batch of `count` pods through nodelet and deletes them again. */
export async function benchNodelet(options: NodeletRunOptions): Promise<NodeletRunResult> {
  const { kubeConfig, runtime, count, agentPid, timeoutMs, log } = options;
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const namespace = await createNamespace(core, count);
  const tracker = new PodTracker(kubeConfig, namespace);
  await tracker.start();
  const names = Array.from({ length: count }, (_, i) => `pod-${String(i).padStart(3, '0')}`);
  const rss = new RssSampler(agentPid);
  try {
    const rssBeforeBytes = await rssBytes(agentPid);
    const cpu0 = await cpuSeconds(agentPid);
    rss.start();
    log(`nodelet: creating ${count} pods in ${namespace}`);
    const createdAt = performance.now();
    await Promise.all(names.map((name) => core.createNamespacedPod({ namespace, body: benchPod(namespace, name, options.nodeName) })));
    await waitUntil(`${count} pods Running`, () => tracker.runningAt.size >= count, timeoutMs);
    const create = summarize([...tracker.runningAt.values()].map((at) => at - createdAt));
    const cpu1 = await cpuSeconds(agentPid);

    log(`nodelet: deleting ${count} pods`);
    const deletedAt = performance.now();
    await Promise.all(names.map((name) => core.deleteNamespacedPod({ name, namespace })));
    await waitUntil(`${count} pods gone from the API`, () => tracker.deletedAt.size >= count, timeoutMs);
    const deleteApi = summarize([...tracker.deletedAt.values()].map((at) => at - deletedAt));
    await waitUntil(`no sandbox of ${namespace} left`, async () => (await sandboxesLeft(runtime, namespace)) === 0, timeoutMs);
    const deleteAllGoneMs = performance.now() - deletedAt;
    const cpu2 = await cpuSeconds(agentPid);
    return { count, create, deleteApi, deleteAllGoneMs, cpuSecondsCreate: cpu1 - cpu0, cpuSecondsDelete: cpu2 - cpu1, peakRssBytes: rss.stop(), rssBeforeBytes };
  } finally {
    rss.stop();
    tracker.stop();
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  }
}
