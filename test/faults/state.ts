/**
 * What fault tests look at: the pods of a namespace in the API, and their sandboxes and containers
 * in the runtime in every state (crictl, JSON output), by namespace or by pod UID. The checks built
 * on them (what "converged" means) are in `census.ts`.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, crictl, eventually, kubectl, readUnlessRemoved } from '../e2e/helpers.js';

/** A sandbox as `crictl pods -o json` shows it. */
export interface RuntimeSandbox {
  readonly id: string;
  readonly state: string;
  readonly uid: string;
  readonly attempt: number;
}

/** A container as `crictl ps -a -o json` shows it. */
export interface RuntimeContainer {
  readonly id: string;
  readonly state: string;
  readonly uid: string;
  /** The container's name in the pod spec. */
  readonly name: string;
  readonly sandboxId: string;
  readonly attempt: number;
  /** The restart count the agent created it as (its annotation); -1 when the annotation is missing. */
  readonly restartCount: number;
  /**
   * Why the runtime says an exited container ended (`crictl inspect`'s `status.reason`, e.g.
   * `Error`, `Completed`, `StartError`); empty for a container that has not exited.
   */
  readonly exitReason: string;
}

/** Everything the runtime has of some pods, in every state. */
export interface RuntimeView {
  readonly sandboxes: readonly RuntimeSandbox[];
  readonly containers: readonly RuntimeContainer[];
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
  podSandboxId?: string;
  labels?: Record<string, string> | null;
  annotations?: Record<string, string> | null;
  metadata?: { name?: string; attempt?: number };
}

const UID_LABEL = 'io.kubernetes.pod.uid';
const NAMESPACE_LABEL = 'io.kubernetes.pod.namespace';
const CONTAINER_NAME_LABEL = 'io.kubernetes.container.name';
const RESTART_COUNT_ANNOTATION = 'io.kubernetes.container.restartCount';

export async function listPods(namespace: string): Promise<V1Pod[]> {
  const out = await kubectl(['get', 'pods', '-n', namespace, '-o', 'json']);
  return (JSON.parse(out) as { items: V1Pod[] }).items;
}

function toSandbox(s: CrictlItem): RuntimeSandbox {
  return { id: s.id, state: s.state, uid: s.labels?.[UID_LABEL] ?? '', attempt: s.metadata?.attempt ?? 0 };
}

function toContainer(c: CrictlItem, exitReason: string): RuntimeContainer {
  const annotated = c.annotations?.[RESTART_COUNT_ANNOTATION];
  return {
    id: c.id,
    state: c.state,
    uid: c.labels?.[UID_LABEL] ?? '',
    name: c.labels?.[CONTAINER_NAME_LABEL] ?? c.metadata?.name ?? '',
    sandboxId: c.podSandboxId ?? '',
    attempt: c.metadata?.attempt ?? 0,
    restartCount: annotated === undefined ? -1 : Number.parseInt(annotated, 10),
    exitReason,
  };
}

/** `crictl inspect`'s reason for an exited container; `crictl ps` does not print it. */
async function exitReasonOf(c: CrictlItem): Promise<string> {
  if (c.state !== 'CONTAINER_EXITED') return '';
  const inspected = JSON.parse(await crictl(['inspect', c.id])) as { status?: { reason?: string } };
  return inspected.status?.reason ?? '';
}

async function sandboxesLabelled(label: string): Promise<RuntimeSandbox[]> {
  const out = await crictl(['pods', '--label', label, '-o', 'json']);
  return ((JSON.parse(out) as { items: CrictlItem[] | null }).items ?? []).map(toSandbox);
}

async function listContainersLabelled(label: string): Promise<CrictlItem[]> {
  const out = await crictl(['ps', '-a', '--label', label, '-o', 'json']);
  return (JSON.parse(out) as { containers: CrictlItem[] | null }).containers ?? [];
}

/** Each listed container with its exit reason; one removed before its reason could be read is left out. */
async function containersLabelled(label: string): Promise<RuntimeContainer[]> {
  const stillListed = async (id: string): Promise<boolean> => (await listContainersLabelled(label)).some((listed) => listed.id === id);
  const read = await Promise.all((await listContainersLabelled(label)).map((c) => readUnlessRemoved(async () => toContainer(c, await exitReasonOf(c)), () => stillListed(c.id))));
  return read.filter((c): c is RuntimeContainer => c !== undefined);
}

/** Sandboxes of the namespace's pods (any state). */
export async function runtimeSandboxes(namespace: string): Promise<RuntimeSandbox[]> {
  return sandboxesLabelled(`${NAMESPACE_LABEL}=${namespace}`);
}

/** Containers of the namespace's pods (any state). */
export async function runtimeContainers(namespace: string): Promise<RuntimeContainer[]> {
  return containersLabelled(`${NAMESPACE_LABEL}=${namespace}`);
}

/** Every sandbox and container of the namespace's pods, in every state. */
export async function runtimeOfNamespace(namespace: string): Promise<RuntimeView> {
  const [sandboxes, containers] = await Promise.all([runtimeSandboxes(namespace), runtimeContainers(namespace)]);
  return { sandboxes, containers };
}

/** Every sandbox and container labelled with this pod UID, in every state. */
export async function runtimeOfUid(uid: string): Promise<RuntimeView> {
  const [sandboxes, containers] = await Promise.all([sandboxesLabelled(`${UID_LABEL}=${uid}`), containersLabelled(`${UID_LABEL}=${uid}`)]);
  return { sandboxes, containers };
}

/** `2×CONTAINER_RUNNING, CONTAINER_EXITED`-style summary of states, for messages. */
export function describeStates(items: readonly { state: string }[]): string {
  if (items.length === 0) return 'none';
  const counts = new Map<string, number>();
  for (const item of items) counts.set(item.state, (counts.get(item.state) ?? 0) + 1);
  return [...counts].map(([state, n]) => (n === 1 ? state : `${n}×${state}`)).join(', ');
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
 * Deletes the namespace and waits (bounded) until it is gone from the API and nothing labelled for
 * it is left in the runtime (no sandbox, no container, in any state), so the next fault test starts
 * on a quiet node and leftovers fail the test that made them. `FAULTS_KEEP_NAMESPACES=1` keeps it,
 * to look at what a failed test left.
 */
export async function deleteNamespaceAndWait(namespace: string, timeoutMs = 180_000): Promise<void> {
  if (process.env.FAULTS_KEEP_NAMESPACES === '1') return;
  await kubectl(['delete', 'namespace', namespace, '--wait=false', '--ignore-not-found']);
  await eventually(`namespace ${namespace} to be deleted`, async () => {
    const out = await kubectl(['get', 'namespace', namespace, '--ignore-not-found', '-o', 'name']);
    return out.trim() === '' ? true : undefined;
  }, timeoutMs);
  await eventually(`the runtime to hold nothing of namespace ${namespace}`, async () => {
    const left = await runtimeOfNamespace(namespace);
    if (left.sandboxes.length + left.containers.length === 0) return true;
    throw new Error(`sandboxes: ${describeStates(left.sandboxes)}; containers: ${describeStates(left.containers)}`);
  }, 60_000);
}
