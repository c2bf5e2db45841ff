/**
 * One batch of the pod-startup benchmark on one agent's node (nodelet's or the kubelet's): N pods
 * created through the API at once, in a namespace of their own, bound to the node; create →
 * Running as seen by a watch (a pod the node rejects at admission settles as Failed); optionally an
 * idle window with the pods Running; then all deleted at once, delete → gone when every pod object
 * is gone from the API and the node's runtime holds no sandbox of theirs (for the kubelet: none
 * still ready, see AgentNode.sandboxGoneWhen). The agent's CPU time and peak RSS are taken over
 * create and delete, the idle window apart.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { RssSampler, cpuSeconds, rssBytes } from './agent-process.js';
import { activePodsOn, sandboxesPending, type AgentNode } from './agent-node.js';
import { PodTracker } from './pod-tracker.js';
import { summarize, type LatencySummary } from './stats.js';

/** The container's script: `sleep 3600`, ending at once on SIGTERM so deletion measures the agent, not a grace period. */
export const SLEEPER_SCRIPT = 'trap "exit 0" TERM; sleep 3600 & wait';
export const BENCH_IMAGE = 'docker.io/library/busybox:1.35';

export interface BatchOptions {
  readonly kubeConfig: KubeConfig;
  readonly node: AgentNode;
  readonly count: number;
  /** Gives up waiting for a phase after this long. */
  readonly timeoutMs: number;
  /** With every pod Running: wait `settleMs`, then take the agent's CPU and RSS over `windowMs`. */
  readonly idle?: { readonly settleMs: number; readonly windowMs: number };
  /** Told when the creates go out and when every pod has settled (bench/cpu-split.ts takes its snapshots there). */
  readonly createWindow?: CreateWindow;
  readonly log: (line: string) => void;
}

/** Hooks around a batch's create phase: awaited just before the first create and just after the last pod settles. */
export interface CreateWindow {
  opened(): Promise<void>;
  closed(): Promise<void>;
}

export interface IdleResult {
  readonly cpuSeconds: number;
  readonly windowMs: number;
  readonly rssBytes: number;
}

export interface BatchResult {
  readonly count: number;
  readonly create: LatencySummary;
  /** Pods the node rejected (phase Failed) instead of running. */
  readonly rejected: number;
  /** Delete issued → every object gone from the API and no sandbox pending in the runtime. */
  readonly deleteGoneMs: number;
  readonly cpuSecondsCreate: number;
  readonly cpuSecondsDelete: number;
  readonly peakRssBytes: number;
  readonly idle: IdleResult | undefined;
}

/** A bench pod: busybox with the given script, bound to the node, no service account token. */
export function benchPod(options: { namespace: string; name: string; nodeName: string; script: string; restartPolicy: 'Always' | 'Never' }): V1Pod {
  return {
    metadata: { name: options.name, namespace: options.namespace, labels: { app: 'bench-pod-startup' } },
    spec: {
      nodeName: options.nodeName,
      restartPolicy: options.restartPolicy,
      // The benchmark measures the agent's work for a pod, not a token request per pod.
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 30,
      containers: [{ name: 'main', image: BENCH_IMAGE, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', options.script] }],
    },
  };
}

export const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function waitUntil(what: string, done: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await pause(100);
  }
}

/** Waits until no pod is active on any of the agents' nodes, so one batch's tail is not the next one's load. */
export async function waitForIdleNodes(kubeConfig: KubeConfig, nodes: readonly AgentNode[]): Promise<void> {
  const idle = async (): Promise<boolean> => (await Promise.all(nodes.map((n) => activePodsOn(kubeConfig, n.nodeName)))).every((c) => c.bench + c.other === 0);
  await waitUntil('idle agent nodes (no pod on either)', idle, 120_000);
}

/** A fresh namespace named after the batch, once its default service account exists. */
export async function createNamespace(core: CoreV1Api, prefix: string): Promise<string> {
  const namespace = `bench-${prefix}-${randomBytes(3).toString('hex')}`;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  // Pods are admitted only once the namespace's default service account exists.
  await waitUntil(`service account default in ${namespace}`, () => core.readNamespacedServiceAccount({ name: 'default', namespace }).then(() => true, () => false), 60_000);
  return namespace;
}

/** Deletes the pods at once; resolves when every object is gone from the API and the runtime holds none pending. */
export async function deleteAndWait(options: { core: CoreV1Api; node: AgentNode; tracker: PodTracker; namespace: string; names: readonly string[]; timeoutMs: number }): Promise<void> {
  const { core, node, tracker, namespace, names, timeoutMs } = options;
  await Promise.all(names.map((name) => core.deleteNamespacedPod({ name, namespace })));
  await waitUntil(`${names.length} pods gone from the API`, () => names.every((n) => tracker.deletedAt.has(n)), timeoutMs);
  await waitUntil(`no sandbox of ${namespace} pending on ${node.nodeName}`, async () => (await sandboxesPending(node, namespace)) === 0, timeoutMs);
}

async function idleWindow(pid: number, idle: NonNullable<BatchOptions['idle']>): Promise<IdleResult> {
  await pause(idle.settleMs);
  const before = await cpuSeconds(pid);
  const from = performance.now();
  await pause(idle.windowMs);
  return { cpuSeconds: (await cpuSeconds(pid)) - before, windowMs: performance.now() - from, rssBytes: await rssBytes(pid) };
}

/** Runs one batch of `count` pods on the node and deletes them again. */
export async function benchAgentBatch(options: BatchOptions): Promise<BatchResult> {
  const { kubeConfig, node, count, timeoutMs, log } = options;
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const namespace = await createNamespace(core, `${node.target}-${count}`);
  const tracker = new PodTracker(kubeConfig, namespace);
  await tracker.start();
  const names = Array.from({ length: count }, (_, i) => `pod-${String(i).padStart(3, '0')}`);
  const rss = new RssSampler(node.pid);
  try {
    const cpu0 = await cpuSeconds(node.pid);
    rss.start();
    log(`${node.target}: creating ${count} pods in ${namespace}`);
    await options.createWindow?.opened();
    const createdAt = performance.now();
    await Promise.all(names.map((name) => core.createNamespacedPod({ namespace, body: benchPod({ namespace, name, nodeName: node.nodeName, script: SLEEPER_SCRIPT, restartPolicy: 'Always' }) })));
    await waitUntil(`${count} pods Running or rejected`, () => tracker.settled() >= count, timeoutMs);
    await options.createWindow?.closed();
    const create = summarize([...tracker.runningAt.values()].map((at) => at - createdAt));
    const cpu1 = await cpuSeconds(node.pid);
    const idle = options.idle === undefined ? undefined : await idleWindow(node.pid, options.idle);
    const cpu2 = await cpuSeconds(node.pid);
    log(`${node.target}: deleting ${count} pods`);
    const deletedAt = performance.now();
    await deleteAndWait({ core, node, tracker, namespace, names, timeoutMs });
    const deleteGoneMs = performance.now() - deletedAt;
    const cpu3 = await cpuSeconds(node.pid);
    const rejected = [...tracker.failedAt.keys()].filter((n) => !tracker.runningAt.has(n)).length;
    return { count, create, rejected, deleteGoneMs, cpuSecondsCreate: cpu1 - cpu0, cpuSecondsDelete: cpu3 - cpu2, peakRssBytes: rss.stop(), idle };
  } finally {
    rss.stop();
    tracker.stop();
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  }
}
