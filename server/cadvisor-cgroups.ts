/**
 * Which cgroups `/metrics/cadvisor` reports and how each is labelled, on plain data. Pure.
 *
 * The kubelet's cAdvisor watches the root cgroup and everything under the kubelet's cgroup roots
 * (`<cgroup-root>/kubepods…`): the QoS cgroups, each pod's (`pod<uid>`) and, below it, one cgroup
 * per runtime container, the sandbox's included. Its labels (the kubelet's
 * containerPrometheusLabelsFunc): a runtime container has its Kubernetes container name, image,
 * runtime ID (`name`), pod and namespace; a sandbox the same with `container=""` (containerd's
 * sandbox container has no container-name label) and the sandbox image; a pod cgroup only its pod
 * and namespace; any other cgroup only its `id`.
 */
import type { Container, PodSandbox } from '../cri/types.js';
import type { ContainerLabels } from './cadvisor-metrics.js';

/** What a cgroup is to the kubelet. */
export type CgroupKind = 'root' | 'plain' | 'pod' | 'sandbox' | 'container';

/** A cgroup to read, with its labels. */
export interface CgroupTarget {
  readonly id: string;
  readonly kind: CgroupKind;
  readonly labels: ContainerLabels;
  /** The runtime container's creation time (ns since the epoch), for container_creation_time_seconds. */
  readonly createdAtNs?: bigint;
  /** The runtime container's ID (its writable layer's figures). */
  readonly containerId?: string;
}

/** The runtime's view, for labelling. */
export interface RuntimeView {
  readonly sandboxes: readonly PodSandbox[];
  readonly containers: readonly Container[];
  /** The image of pod sandboxes (`--pod-infra-container-image`): CRI does not say which a sandbox runs. */
  readonly sandboxImage: string;
}

const EMPTY: Omit<ContainerLabels, 'id'> = { container: '', image: '', name: '', namespace: '', pod: '' };

/** The kubepods cgroup under a cgroup root (`/` → `/kubepods`, `/nodelet` → `/nodelet/kubepods`). */
export function kubepodsCgroup(cgroupRoot: string): string {
  const root = cgroupRoot.replace(/\/+$/, '');
  return `${root}/kubepods`;
}

function basename(id: string): string {
  return id.slice(id.lastIndexOf('/') + 1);
}

/** The pod a `pod<uid>` cgroup belongs to; a ready sandbox's metadata wins over an old one's. */
function podOf(uid: string, view: RuntimeView): { name: string; namespace: string } | undefined {
  const matching = view.sandboxes.filter((s) => s.metadata.uid === uid);
  const sandbox = matching.find((s) => s.state === 'SANDBOX_READY') ?? matching[0];
  return sandbox === undefined ? undefined : { name: sandbox.metadata.name, namespace: sandbox.metadata.namespace };
}

function podTarget(id: string, uid: string, view: RuntimeView): CgroupTarget {
  const pod = podOf(uid, view);
  return { id, kind: pod === undefined ? 'plain' : 'pod', labels: { ...EMPTY, id, pod: pod?.name ?? '', namespace: pod?.namespace ?? '' } };
}

function containerTarget(id: string, container: Container, view: RuntimeView): CgroupTarget {
  const sandbox = view.sandboxes.find((s) => s.id === container.podSandboxId);
  const pod = sandbox?.metadata.name ?? container.labels['io.kubernetes.pod.name'] ?? '';
  const namespace = sandbox?.metadata.namespace ?? container.labels['io.kubernetes.pod.namespace'] ?? '';
  const image = container.image.userSpecifiedImage ?? container.image.image;
  return { id, kind: 'container', labels: { id, container: container.metadata.name, image, name: container.id, pod, namespace }, createdAtNs: container.createdAt, containerId: container.id };
}

/** The target for one cgroup id, labelled from the runtime's view. */
export function classifyCgroup(id: string, view: RuntimeView): CgroupTarget {
  if (id === '/') return { id, kind: 'root', labels: { ...EMPTY, id } };
  const leaf = basename(id);
  const podDir = /^pod(.+)$/.exec(leaf);
  if (podDir?.[1] !== undefined) return podTarget(id, podDir[1], view);
  const container = view.containers.find((c) => c.id === leaf);
  if (container !== undefined) return containerTarget(id, container, view);
  const sandbox = view.sandboxes.find((s) => s.id === leaf);
  if (sandbox !== undefined) {
    const labels = { id, container: '', image: view.sandboxImage, name: sandbox.id, pod: sandbox.metadata.name, namespace: sandbox.metadata.namespace };
    return { id, kind: 'sandbox', labels, createdAtNs: sandbox.createdAt };
  }
  return { id, kind: 'plain', labels: { ...EMPTY, id } };
}

/** The device (mount source) of the filesystem holding `dir`, from a mount table: the longest mount point above it. */
export function deviceOf(mountinfo: string, dir: string): string | undefined {
  let best: { point: string; source: string } | undefined;
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    const point = left?.split(' ')[4]?.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
    const source = right?.split(' ')[1];
    if (point === undefined || source === undefined) continue;
    const under = point === '/' || dir === point || dir.startsWith(`${point}/`);
    if (under && (best === undefined || point.length >= best.point.length)) best = { point, source };
  }
  // tmpfs and other device-less filesystems: cAdvisor names them by mount point.
  if (best !== undefined && !best.source.startsWith('/')) return best.point;
  return best?.source;
}
