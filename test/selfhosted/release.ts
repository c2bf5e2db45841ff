/**
 * The chart release the self-hosted and upgrade suites install on the test cluster, seen from the
 * API and the host: its names, its agent pod and Node becoming ready, a workload container's
 * identity (what must survive the agent's restarts and upgrades), and the removal of the whole
 * install with a count of what it left on the host.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import { it } from 'node:test';
import type { V1CertificateSigningRequest, V1Node, V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, eventually, getPod, kubectl, kubectlOutcome } from '../e2e/helpers.js';
import { helm } from '../integration/helm-chart-helpers.js';
import { deleteAgentCsrs, describeLeftovers, hostLeftovers, inPodCrictl } from './selfhosted-helpers.js';

const run = promisify(execFile);

export const RELEASE = 'nodelet';
export const NAMESPACE = 'nodelet-selfhosted';
/** The Node the chart's agent registers: the host's name with the chart's default suffix. */
export const SELF_NODE = `${NODE_NAME}-nodelet`;
export const AGENT_SELECTOR = 'app.kubernetes.io/component=agent';
/** Who the agent is to the API server: its ServiceAccount (the bootstrap), then its Node. */
export const AGENT_USERS = [`system:serviceaccount:${NAMESPACE}:${RELEASE}`, `system:node:${SELF_NODE}`];

/** Every certificate request the release's agent made (as its ServiceAccount or as its Node). */
export async function agentCsrs(): Promise<V1CertificateSigningRequest[]> {
  const list = JSON.parse(await kubectl(['get', 'csr', '-o', 'json'])) as { items: V1CertificateSigningRequest[] };
  return list.items.filter((c) => AGENT_USERS.includes(c.spec.username ?? ''));
}

/** Waits until the agent holds a certificate from `signer`; then every request it made. */
export async function agentCsrsOnceIssued(signer: string, timeoutMs: number): Promise<V1CertificateSigningRequest[]> {
  return eventually(`the agent's ${signer} request approved and issued`, async () => {
    const mine = await agentCsrs();
    return mine.some((c) => c.spec.signerName === signer && c.status?.certificate !== undefined) ? mine : undefined;
  }, timeoutMs);
}

/** Each request as `<signer> by <requester>: <condition>/<reason>,…`, sorted: for printing and comparing. */
export function csrVerdicts(csrs: readonly V1CertificateSigningRequest[]): string[] {
  return csrs.map((c) => `${c.spec.signerName} by ${c.spec.username}: ${(c.status?.conditions ?? []).map((x) => `${x.type}/${x.reason ?? ''}`).join(',')}`).sort();
}

/** The one agent pod of the release, Running with both containers Ready (and not `notUid`). */
export async function readyAgentPod(notUid?: string): Promise<V1Pod> {
  return eventually('the agent pod Running and Ready', async () => {
    const list = JSON.parse(await kubectl(['get', 'pods', '-n', NAMESPACE, '-l', AGENT_SELECTOR, '-o', 'json'])) as { items: V1Pod[] };
    const live = list.items.filter((p) => p.metadata?.deletionTimestamp === undefined);
    const [pod] = live;
    if (live.length !== 1 || pod === undefined || pod.metadata?.uid === notUid) return undefined;
    const ready = pod.status?.phase === 'Running' && (pod.status.containerStatuses ?? []).length === 2 &&
      (pod.status.containerStatuses ?? []).every((c) => c.ready);
    return ready ? pod : undefined;
  }, 240_000);
}

/** The self-hosted Node once it is Ready and the node lifecycle controller has lifted its not-ready taint. */
export async function readyNode(): Promise<V1Node> {
  return eventually(`node ${SELF_NODE} Ready`, async () => {
    const out = await kubectlOutcome(['get', 'node', SELF_NODE, '-o', 'json']);
    if (out.code !== 0) return undefined;
    const node = JSON.parse(out.stdout) as V1Node;
    const ready = node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
    const notReadyTaint = (node.spec?.taints ?? []).some((t) => t.key === 'node.kubernetes.io/not-ready');
    return ready && !notReadyTaint ? node : undefined;
  }, 240_000);
}

/**
 * A pod's first container as the API and the in-pod runtime see it: ID, restart count and the
 * runtime's state. Equal before and after an agent restart means the same container, untouched.
 */
export async function containerIdentity(namespace: string, name: string): Promise<string> {
  const pod = await getPod(namespace, name);
  const status = pod?.status?.containerStatuses?.[0];
  const id = (status?.containerID ?? '').replace('containerd://', '');
  const runtime = JSON.parse(await inPodCrictl(['inspect', id])) as { status: { state: string } };
  return `${id} restarts=${status?.restartCount ?? -1} runtime=${runtime.status.state}`;
}

/** What a suite made, for removeInstall. */
export interface Install {
  /** Namespaces of workloads: deleted first, while the agent still runs to stop their containers. */
  readonly workloadNamespaces: readonly string[];
  /** Releases as [name, namespace]: uninstalled, their namespaces deleted. */
  readonly releases: readonly (readonly [string, string])[];
  /** The shared bind mounts the suite made (makeSharedMounts): unmounted once nothing is below them. */
  readonly sharedMounts: readonly string[];
  /** The in-pod runtime's pod bridge. */
  readonly bridge: string;
}

/**
 * Removes everything a suite made, whatever step it stopped at, and asserts that the host holds
 * nothing of the in-pod runtime afterwards. The host directories and the shim cgroup are hostPaths
 * the chart made, which Helm cannot remove: they go only when nothing is mounted below them.
 */
export async function removeInstall(install: Install): Promise<void> {
  if (process.env.KUBECONFIG === undefined) return;
  for (const ns of install.workloadNamespaces) {
    await kubectl(['delete', 'namespace', ns, '--ignore-not-found', '--wait=true', '--timeout=60s']).catch(() => '');
  }
  for (const [name, ns] of install.releases) {
    await helm(['uninstall', name, '--namespace', ns, '--wait', '--timeout', '120s']);
    await kubectl(['delete', 'namespace', ns, '--ignore-not-found', '--wait=false']).catch(() => '');
  }
  await kubectl(['delete', 'node', SELF_NODE, '--ignore-not-found']).catch(() => '');
  await kubectl(['delete', 'nodeagent', SELF_NODE, '--ignore-not-found']).catch(() => '');
  await deleteAgentCsrs(AGENT_USERS).catch(() => undefined);
  let found = await hostLeftovers(install.bridge);
  if (found.processes.length === 0 && found.mounts.every((m) => install.sharedMounts.includes(m))) {
    for (const dir of install.sharedMounts) await run('umount', [dir]);
    found = await hostLeftovers(install.bridge);
  }
  if (found.processes.length === 0 && found.mounts.length === 0) {
    for (const dir of found.dirs) await rm(dir, { recursive: true, force: true });
    for (const cgroup of found.cgroups) await run('rmdir', [cgroup]).catch(() => undefined);
  }
  const final = await hostLeftovers(install.bridge);
  console.log(`# after the suite's clean-up, on the host: ${describeLeftovers(final)}`);
  assert.equal(describeLeftovers(final), describeLeftovers({ processes: [], mounts: [], veths: [], cgroups: [], dirs: [] }), JSON.stringify(final));
}

/**
 * The step function of a suite whose steps build on each other: once one fails, `diagnose` prints
 * what there is to read and the later steps are skipped instead of timing out one by one.
 */
export function sequence(diagnose: () => Promise<void>): (name: string, body: () => Promise<void>) => void {
  let broken = false;
  return (name, body) => {
    it(name, async (t) => {
      if (broken) {
        t.skip('an earlier step failed');
        return;
      }
      try {
        await body();
      } catch (error) {
        broken = true;
        await diagnose();
        throw error;
      }
    });
  };
}
