/**
 * The raw limit of the machine for the pod-startup benchmark: N pods driven straight through the
 * project's CRI client, no API server, queue or agent: RunPodSandbox + CreateContainer +
 * StartContainer per pod, at a given concurrency (or all at once). The configs are the ones the
 * agent builds (`buildSandboxConfig`, `buildContainerConfig`) for the same busybox pod, but
 * labelled with a node name of their own (`nodelet-bench-raw`), so the agent on this node never
 * touches them. Teardown (StopPodSandbox + RemovePodSandbox) is timed too.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { ImageService, RuntimeService } from '../cri/types.js';
import { buildContainerConfig } from '../reconcilers/container/container-config.js';
import { LABEL_NODE } from '../reconcilers/model/runtime-labels.js';
import { buildSandboxConfig } from '../reconcilers/container/sandbox-config.js';
import { DEFAULT_MASKED_PATHS } from '../reconcilers/container/security-context.js';
import { BENCH_IMAGE, SLEEPER_SCRIPT, type CreateWindow } from './agent-startup.js';
import { inPool, summarize, type LatencySummary } from './stats.js';

/** The node label value of the benchmark's own sandboxes: not the agent's node, so it leaves them alone. */
export const RAW_NODE = 'nodelet-bench-raw';

export interface RawRunOptions {
  readonly runtime: RuntimeService;
  readonly images: ImageService;
  readonly count: number;
  /** Pods in flight at once; `undefined`: all of them. */
  readonly concurrency: number | undefined;
  /** Told when the first pod's start begins and when the last pod has started. */
  readonly createWindow?: CreateWindow;
  readonly log: (line: string) => void;
}

export interface RawRunResult {
  readonly count: number;
  readonly concurrency: number | undefined;
  readonly create: LatencySummary;
  /** Stop + remove of every sandbox, at the same concurrency. */
  readonly teardownMs: number;
}

const CONTAINER: V1Container = { name: 'main', image: BENCH_IMAGE, command: ['sh', '-c', SLEEPER_SCRIPT] };

/** A pod object that exists only here, never in the API: what the agent's config builders read. */
export function syntheticPod(namespace: string, name: string, container: V1Container = CONTAINER): V1Pod {
  return { metadata: { name, namespace, uid: randomUUID() }, spec: { containers: [container] } };
}

/** Stops and removes every sandbox the benchmark left behind (an interrupted earlier run included). */
export async function removeRawLeftovers(runtime: RuntimeService): Promise<number> {
  const left = await runtime.listPodSandbox({ labelSelector: { [LABEL_NODE]: RAW_NODE } });
  await inPool(left, 8, async (sandbox) => {
    await runtime.stopPodSandbox(sandbox.id);
    await runtime.removePodSandbox(sandbox.id);
  });
  return left.length;
}

/** The kubelet's defaults (nodelet's, with no host probing): Unconfined seccomp, the default masked paths. */
const BENCH_SECURITY = { seccompProfileRoot: '/var/lib/nodelet/seccomp', seccompDefault: false, maskedPaths: DEFAULT_MASKED_PATHS } as const;

/** The bench image's ID in the runtime, for {@link RawPodContext}; fails when the image is not there. */
export async function benchImageRef(images: ImageService): Promise<string> {
  const imageRef = (await images.imageStatus({ image: BENCH_IMAGE }))?.id;
  if (imageRef === undefined) throw new Error(`${BENCH_IMAGE} is not in the runtime: run npm run cluster:up`);
  return imageRef;
}

/** Where a raw pod's image and logs come from. */
export interface RawPodContext {
  /** The image's ID in the runtime (ImageStatus), as the agent passes it. */
  readonly imageRef: string;
  /** The directory under which each sandbox gets its log directory. */
  readonly logRoot: string;
}

/**
 * Starts the synthetic pod's first container in a sandbox of its own, with the configs the agent
 * would build for it (labelled with {@link RAW_NODE}): RunPodSandbox + CreateContainer + StartContainer.
 */
export async function startRawPod(runtime: RuntimeService, pod: V1Pod, context: RawPodContext): Promise<{ readonly sandboxId: string; readonly containerId: string }> {
  const container = pod.spec?.containers[0];
  if (container === undefined) throw new Error(`synthetic pod ${pod.metadata?.name ?? ''} has no container`);
  const sandboxConfig = buildSandboxConfig(pod, { nodeName: RAW_NODE, podLogDir: context.logRoot, attempt: 0, clusterDomain: 'cluster.local' });
  await mkdir(sandboxConfig.logDirectory, { recursive: true, mode: 0o755 });
  const sandboxId = await runtime.runPodSandbox(sandboxConfig);
  const config = buildContainerConfig({ pod, container, kind: 'regular', nodeName: RAW_NODE, restartCount: 0, imageRef: context.imageRef, env: [], mounts: [], security: BENCH_SECURITY, imageUser: { uid: 0n }, memoryCapacityBytes: os.totalmem() });
  const containerId = await runtime.createContainer(sandboxId, config, sandboxConfig);
  await runtime.startContainer(containerId);
  return { sandboxId, containerId };
}

/** Starts `count` pods straight through the CRI, measures, and removes them again. */
export async function benchRawCri(options: RawRunOptions): Promise<RawRunResult> {
  const { runtime, count, concurrency, log } = options;
  const imageRef = await benchImageRef(options.images);
  const logRoot = await mkdtemp(path.join(os.tmpdir(), 'nodelet-bench-'));
  const namespace = `bench-raw-${randomBytes(3).toString('hex')}`;
  const pods = Array.from({ length: count }, (_, i) => syntheticPod(namespace, `raw-${String(i).padStart(3, '0')}`));
  const sandboxIds: string[] = [];
  const latencies: number[] = [];
  try {
    log(`raw CRI: starting ${count} pods, ${concurrency === undefined ? 'all at once' : `${concurrency} at a time`}`);
    await options.createWindow?.opened();
    const startedAt = performance.now();
    await inPool(pods, concurrency, async (pod) => {
      sandboxIds.push((await startRawPod(runtime, pod, { imageRef, logRoot })).sandboxId);
      latencies.push(performance.now() - startedAt);
    });
    await options.createWindow?.closed();
    const create = summarize(latencies);
    log(`raw CRI: removing ${count} pods`);
    const teardownFrom = performance.now();
    await inPool(sandboxIds, concurrency, async (id) => {
      await runtime.stopPodSandbox(id);
      await runtime.removePodSandbox(id);
    });
    return { count, concurrency, create, teardownMs: performance.now() - teardownFrom };
  } finally {
    await removeRawLeftovers(runtime);
    await rm(logRoot, { recursive: true, force: true });
  }
}
