/** What the node's `/metrics` reads from the agent's parts: the pod counts' view, the startup times, the build, the host's cgroup version. */
import { readFile } from 'node:fs/promises';
import { uptime } from 'node:os';
import { nodeletPackageVersion } from '../../controllers/node/agent-version.js';
import { cgroupLayout } from '../../reconcilers/cgroups/host-cgroupfs.js';
import type { NodeMetricsOptions } from '../../server/node-metrics.js';
import type { Clock } from '../../util/clock.js';
import type { AgentSettings } from '../flags.js';
import type { DesiredPodStore } from '../../controllers/pod-sources/pod-store.js';
import { isStaticPod } from '../../controllers/pod-sources/static-pod.js';
import type { StaticPods } from '../../controllers/pod-sources/static-pods.js';
import type { PodSync } from '../../reconcilers/pod/pod-sync.js';
import type { PodCountsView } from '../../server/pod-metrics.js';

/** The pod counts read from the store, the lifecycle kernel, the mirror pods and the resizes. */
export function podCountsView(store: Pick<DesiredPodStore, 'list'>, podSync: Pick<PodSync, 'lifecycle' | 'resizesInProgress'>, staticPods: Pick<StaticPods, 'mirrors'> | undefined): PodCountsView {
  return {
    desired: () => store.list(),
    isStatic: isStaticPod,
    hasMirror: (pod) => staticPods?.mirrors.mirrorOf(pod) !== undefined,
    working: () => podSync.lifecycle.list().map((r) => ({ uid: r.key.uid, phase: r.phase, admitted: r.admittedAt !== undefined })),
    resizesInProgress: () => podSync.resizesInProgress(),
  };
}

/** When this process started and the host booted, in milliseconds since the epoch (the kubelet's node startup tracker's). */
export function agentStartup(): { agentStartMs: number; bootMs: number } {
  const now = Date.now();
  return { agentStartMs: now - process.uptime() * 1000, bootMs: now - uptime() * 1000 };
}

/** The host's cgroup version as the kubelet reports it (v2 only on a unified host); undefined when the mount table shows none or cannot be read. */
export async function hostCgroupVersion(mountinfoPath = '/proc/self/mountinfo'): Promise<1 | 2 | undefined> {
  try {
    const layout = cgroupLayout(await readFile(mountinfoPath, 'utf8'));
    return layout.version === 'none' ? undefined : layout.version;
  } catch {
    return undefined;
  }
}

/** The options of the node's registry: its name, the startup times, nodelet's build (commit from `NODELET_GIT_COMMIT`), the cgroup version. */
export async function nodeMetricsOptions(settings: Pick<AgentSettings, 'nodeName'>, clock: Clock): Promise<NodeMetricsOptions> {
  const cgroupVersion = await hostCgroupVersion();
  return {
    nodeName: settings.nodeName,
    clock,
    startup: agentStartup(),
    build: { packageVersion: nodeletPackageVersion(), gitCommit: process.env.NODELET_GIT_COMMIT ?? '' },
    ...(cgroupVersion === undefined ? {} : { cgroupVersion }),
  };
}
