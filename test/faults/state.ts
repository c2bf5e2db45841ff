/**
 * What fault tests look at after a fault: the pods of a namespace in the API and their sandboxes
 * and containers in the runtime (crictl, JSON output), and the checks that say a namespace has
 * converged: the pods that should exist are Running with one ready sandbox, the deleted ones are
 * gone from both, nothing is orphaned, and no running container was replaced.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, crictl, eventually, kubectl } from '../e2e/helpers.js';

/** A sandbox as `crictl pods -o json` shows it. */
export interface RuntimeSandbox {
  readonly id: string;
  readonly state: string;
  readonly uid: string;
}

/** A container as `crictl ps -a -o json` shows it. */
export interface RuntimeContainer {
  readonly id: string;
  readonly state: string;
  readonly uid: string;
  readonly attempt: number;
}

/** The container of a Running pod, as the API reports it before a fault. */
export interface RunningContainer {
  readonly podName: string;
  readonly uid: string;
  /** The bare runtime ID (without `containerd://`). */
  readonly containerId: string;
  readonly restartCount: number;
}

interface CrictlItem {
  id: string;
  state: string;
  labels?: Record<string, string>;
  metadata?: { attempt?: number };
}

const UID_LABEL = 'io.kubernetes.pod.uid';
const NAMESPACE_LABEL = 'io.kubernetes.pod.namespace';

export async function listPods(namespace: string): Promise<V1Pod[]> {
  const out = await kubectl(['get', 'pods', '-n', namespace, '-o', 'json']);
  return (JSON.parse(out) as { items: V1Pod[] }).items;
}

/** Sandboxes of the namespace's pods (any state). */
export async function runtimeSandboxes(namespace: string): Promise<RuntimeSandbox[]> {
  const out = await crictl(['pods', '--label', `${NAMESPACE_LABEL}=${namespace}`, '-o', 'json']);
  const items = (JSON.parse(out) as { items: CrictlItem[] | null }).items ?? [];
  return items.map((s) => ({ id: s.id, state: s.state, uid: s.labels?.[UID_LABEL] ?? '' }));
}

/** Containers of the namespace's pods (any state). */
export async function runtimeContainers(namespace: string): Promise<RuntimeContainer[]> {
  const out = await crictl(['ps', '-a', '--label', `${NAMESPACE_LABEL}=${namespace}`, '-o', 'json']);
  const items = (JSON.parse(out) as { containers: CrictlItem[] | null }).containers ?? [];
  return items.map((c) => ({ id: c.id, state: c.state, uid: c.labels?.[UID_LABEL] ?? '', attempt: c.metadata?.attempt ?? 0 }));
}

/** The host pid of a running container's first process (`crictl inspect`). */
export async function containerPid(containerId: string): Promise<number> {
  const info = JSON.parse(await crictl(['inspect', containerId])) as { info?: { pid?: number } };
  const pid = info.info?.pid ?? 0;
  if (pid <= 0) throw new Error(`crictl inspect ${containerId} shows no pid`);
  return pid;
}

export function bareContainerId(id: string | undefined): string {
  return (id ?? '').replace(/^[a-z]+:\/\//, '');
}

/** The `main` container of every pod the API shows Running with that container running. */
export function runningContainers(pods: readonly V1Pod[]): RunningContainer[] {
  return pods.flatMap((pod) => {
    const status = pod.status?.containerStatuses?.[0];
    if (pod.status?.phase !== 'Running' || status?.state?.running === undefined || status.containerID === undefined) return [];
    return [{ podName: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '', containerId: bareContainerId(status.containerID), restartCount: status.restartCount }];
  });
}

/** What a namespace should look like once it has converged. */
export interface Expectation {
  readonly namespace: string;
  /** Names of the pods that should exist and be Running. */
  readonly present: readonly string[];
  /** UIDs of pods that were deleted: gone from the API and the runtime. */
  readonly deletedUids: readonly string[];
}

function apiProblems(pods: readonly V1Pod[], expectation: Expectation): string[] {
  const problems: string[] = [];
  const byName = new Map(pods.map((p) => [p.metadata?.name ?? '', p]));
  for (const name of expectation.present) {
    const pod = byName.get(name);
    const running = pod?.status?.containerStatuses?.[0]?.state?.running !== undefined;
    if (pod === undefined) problems.push(`${name} is missing from the API`);
    else if (pod.status?.phase !== 'Running' || !running) problems.push(`${name} is ${pod.status?.phase ?? 'without phase'}${running ? '' : ' (main not running)'}`);
  }
  const present = new Set(expectation.present);
  for (const pod of pods) {
    const name = pod.metadata?.name ?? '';
    if (!present.has(name)) problems.push(`deleted pod ${name} is still in the API (deletionTimestamp ${pod.metadata?.deletionTimestamp?.toString() ?? 'unset'})`);
  }
  return problems;
}

function runtimeProblems(state: { pods: readonly V1Pod[]; sandboxes: readonly RuntimeSandbox[]; containers: readonly RuntimeContainer[] }, expectation: Expectation): string[] {
  const problems: string[] = [];
  const apiUids = new Set(state.pods.map((p) => p.metadata?.uid ?? ''));
  const deleted = new Set(expectation.deletedUids);
  for (const s of state.sandboxes) if (deleted.has(s.uid)) problems.push(`deleted pod ${s.uid} still has sandbox ${s.id.slice(0, 12)} (${s.state})`);
  for (const c of state.containers) {
    if (deleted.has(c.uid)) problems.push(`deleted pod ${c.uid} still has container ${c.id.slice(0, 12)} (${c.state})`);
    else if (!apiUids.has(c.uid)) problems.push(`orphan container ${c.id.slice(0, 12)} of pod ${c.uid}, which the API does not have`);
  }
  for (const uid of apiUids) {
    const ready = state.sandboxes.filter((s) => s.uid === uid && s.state === 'SANDBOX_READY').length;
    const running = state.containers.filter((c) => c.uid === uid && c.state === 'CONTAINER_RUNNING').length;
    if (ready > 1) problems.push(`pod ${uid} has ${ready} ready sandboxes`);
    if (running > 1) problems.push(`pod ${uid} has ${running} running containers`);
  }
  return problems;
}

/** Every way the namespace differs from the expectation right now (empty: converged). */
export async function convergenceProblems(expectation: Expectation): Promise<string[]> {
  const [pods, sandboxes, containers] = await Promise.all([
    listPods(expectation.namespace),
    runtimeSandboxes(expectation.namespace),
    runtimeContainers(expectation.namespace),
  ]);
  return [...apiProblems(pods, expectation), ...runtimeProblems({ pods, sandboxes, containers }, expectation)];
}

/** A probe for `eventually`: resolves when converged, throws the first problems otherwise. */
export function converged(expectation: Expectation): () => Promise<true> {
  return async () => {
    const problems = await convergenceProblems(expectation);
    if (problems.length > 0) throw new Error(`${problems.length} problems, e.g. ${problems.slice(0, 6).join('; ')}`);
    return true;
  };
}

/** Running containers (recorded before a fault) that now have another ID or restart count, in the API or the runtime. */
export async function replacedContainers(namespace: string, before: readonly RunningContainer[]): Promise<string[]> {
  const [pods, containers] = await Promise.all([listPods(namespace), runtimeContainers(namespace)]);
  const now = new Map(runningContainers(pods).map((c) => [c.uid, c]));
  const runningIds = new Set(containers.filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => c.id));
  return before.flatMap((was) => {
    const is = now.get(was.uid);
    if (is === undefined) return [`${was.podName}: main is no longer running in the API`];
    const changes: string[] = [];
    if (is.containerId !== was.containerId) changes.push(`${was.podName}: container ${was.containerId.slice(0, 12)} replaced by ${is.containerId.slice(0, 12)}`);
    if (is.restartCount !== was.restartCount) changes.push(`${was.podName}: restartCount ${was.restartCount} → ${is.restartCount}`);
    if (!runningIds.has(was.containerId)) changes.push(`${was.podName}: container ${was.containerId.slice(0, 12)} is not running in the runtime`);
    return changes;
  });
}

/** The node's Ready condition status (`True`, `False`, `Unknown`), or `Unreadable` when the API does not answer. */
export async function nodeReadyStatus(): Promise<string> {
  try {
    const out = await kubectl(['get', 'node', NODE_NAME, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}', '--request-timeout=5s']);
    return out.trim() === '' ? 'Unknown' : out.trim();
  } catch {
    return 'Unreadable';
  }
}

/**
 * Deletes the namespace and waits (bounded) until it is gone, so the next fault test starts on a
 * quiet node. `FAULTS_KEEP_NAMESPACES=1` keeps it, to look at what a failed test left.
 */
export async function deleteNamespaceAndWait(namespace: string, timeoutMs = 180_000): Promise<void> {
  if (process.env.FAULTS_KEEP_NAMESPACES === '1') return;
  await kubectl(['delete', 'namespace', namespace, '--wait=false', '--ignore-not-found']);
  await eventually(`namespace ${namespace} to be deleted`, async () => {
    const out = await kubectl(['get', 'namespace', namespace, '--ignore-not-found', '-o', 'name']);
    return out.trim() === '' ? true : undefined;
  }, timeoutMs);
}
