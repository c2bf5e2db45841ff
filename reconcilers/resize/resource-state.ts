/**
 * The node's record of pod resources, kept across agent restarts (the kubelet's
 * `allocated_pods_state` and `actuated_pods_state` checkpoints, here one file,
 * `<root-dir>/pod_resources_state.json`):
 *
 * - allocated: per pod, the CPU and memory requirements of each container the node accepted (at
 *   admission, then at each admitted resize). The pod runs as allocated, whatever its spec says
 *   while a resize is pending: a restarted agent must neither forget a deferred resize nor apply it
 *   behind the node's back, so it reads the allocation from here, not from the spec.
 * - actuated: per running container (by runtime ID), the values last applied by an in-place update.
 *   A container not listed runs with what it was created with (its `nodelet.dev/resources`
 *   annotation). Entries of containers that are gone are dropped.
 *
 * Written synchronously (small JSON, write-then-rename) before anything acts on a change, so a
 * crash never leaves the runtime ahead of the record. Registered on the pod lifecycle: a forgotten
 * pod leaves nothing here. Each pod's part of the file is serialized once per change of that pod,
 * not at every write: the file is rewritten whole at least twice per pod (admitted, forgotten), and
 * serializing every pod each time grew with the square of the pods on the node.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { V1Container, V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { PodLifecycleObserver } from '../lifecycle/observer.js';
import type { PodKey } from '../../util/pod-key.js';
import { cpuMemoryOnly, type ResourceValues } from '../model/resource-values.js';

export const RESOURCE_STATE_FILE = 'pod_resources_state.json';

interface PodRecord {
  /** Container name → allocated CPU and memory requirements. */
  allocated: Record<string, V1ResourceRequirements>;
  /** Runtime container ID → values applied by the last in-place update. */
  actuated: Record<string, ResourceValues>;
  /** Pod-level CPU and memory (`spec.resources`) as admitted, when the pod sets them. */
  podLevel?: V1ResourceRequirements;
}

interface StateFile {
  readonly version: 1;
  readonly pods: Record<string, PodRecord>;
}

/** The containers whose resources are allocated: app containers and init containers. */
function allocatableContainers(pod: V1Pod): V1Container[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
}

function withResources(containers: readonly V1Container[] | undefined, allocated: Record<string, V1ResourceRequirements>): V1Container[] | undefined {
  if (containers === undefined) return undefined;
  return containers.map((c) => {
    const a = allocated[c.name];
    if (a === undefined) return c;
    // Other resources (extended, ephemeral-storage) are not resizable: they stay as in the spec.
    const rest = (list: Readonly<Record<string, string>> | undefined): Record<string, string> => Object.fromEntries(Object.entries(list ?? {}).filter(([name]) => name !== 'cpu' && name !== 'memory'));
    return { ...c, resources: { ...c.resources, requests: { ...rest(c.resources?.requests), ...a.requests }, limits: { ...rest(c.resources?.limits), ...a.limits } } };
  });
}

export class PodResourceState implements PodLifecycleObserver {
  private readonly pods: Map<string, PodRecord>;
  /** Each pod's record as JSON, as last changed: what the file is assembled from. */
  private readonly serialized = new Map<string, string>();
  private rootDirMade = false;

  constructor(private readonly options: { readonly rootDir: string; readonly logger: Logger }) {
    this.pods = this.load();
    for (const [uid, record] of this.pods) this.serialized.set(uid, JSON.stringify(record));
  }

  get file(): string {
    return path.join(this.options.rootDir, RESOURCE_STATE_FILE);
  }

  hasAllocation(uid: string): boolean {
    return this.pods.has(uid);
  }

  /** The pod with its containers' CPU and memory as allocated; the pod itself when nothing is allocated yet. */
  allocatedPod(pod: V1Pod): V1Pod {
    const record = this.pods.get(pod.metadata?.uid ?? '');
    if (record === undefined || pod.spec === undefined) return pod;
    const containers = withResources(pod.spec.containers, record.allocated) ?? [];
    const initContainers = withResources(pod.spec.initContainers, record.allocated);
    const resources = record.podLevel === undefined ? {} : { resources: { ...pod.spec.resources, ...record.podLevel } };
    return { ...pod, spec: { ...pod.spec, containers, ...(initContainers === undefined ? {} : { initContainers }), ...resources } };
  }

  /** The pod-level resources the pod was admitted with; undefined when it sets none (or has no record). */
  allocatedPodResources(uid: string): V1ResourceRequirements | undefined {
    return this.pods.get(uid)?.podLevel;
  }

  /** Records the pod's current spec resources as allocated (admission, or an admitted resize). */
  setAllocated(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    const allocated = Object.fromEntries(allocatableContainers(pod).map((c) => [c.name, cpuMemoryOnly(c.resources)]));
    const podLevel = pod.spec?.resources === undefined ? {} : { podLevel: cpuMemoryOnly(pod.spec.resources) };
    this.pods.set(uid, { allocated, actuated: this.pods.get(uid)?.actuated ?? {}, ...podLevel });
    this.changed(uid);
  }

  /** The values last applied in place to this container; undefined when none was (it runs as created). */
  actuated(uid: string, containerId: string): ResourceValues | undefined {
    return this.pods.get(uid)?.actuated[containerId];
  }

  setActuated(uid: string, containerId: string, values: ResourceValues): void {
    const record = this.pods.get(uid);
    if (record === undefined) return;
    record.actuated[containerId] = values;
    this.changed(uid);
  }

  /** Drops the actuated entries of containers the runtime no longer has. */
  retainContainers(uid: string, ids: ReadonlySet<string>): void {
    const record = this.pods.get(uid);
    if (record === undefined) return;
    const kept = Object.entries(record.actuated).filter(([id]) => ids.has(id));
    if (kept.length === Object.keys(record.actuated).length) return;
    record.actuated = Object.fromEntries(kept);
    this.changed(uid);
  }

  podForgotten(key: PodKey): void {
    if (this.pods.delete(key.uid)) this.changed(key.uid);
  }

  /** Pods with a record. */
  size(): number {
    return this.pods.size;
  }

  private load(): Map<string, PodRecord> {
    let raw: string;
    try {
      raw = readFileSync(this.file, 'utf8');
    } catch {
      return new Map();
    }
    try {
      const parsed = JSON.parse(raw) as StateFile;
      return new Map(Object.entries(parsed.pods));
    } catch (err) {
      // A corrupt record is not trusted; the pods are allocated again from their specs as they are admitted.
      this.options.logger.error({ err, file: this.file }, 'pod resources state is unreadable: starting afresh');
      return new Map();
    }
  }

  /** Serializes pod `uid`'s record again (drops it when the pod has none) and writes the file. */
  private changed(uid: string): void {
    const record = this.pods.get(uid);
    if (record === undefined) this.serialized.delete(uid);
    else this.serialized.set(uid, JSON.stringify(record));
    this.save();
  }

  /** The {@link StateFile}, assembled from the pods' serialized records. */
  private save(): void {
    const pods = [...this.serialized].map(([uid, json]) => `${JSON.stringify(uid)}:${json}`).join(',');
    if (!this.rootDirMade) {
      mkdirSync(this.options.rootDir, { recursive: true });
      this.rootDirMade = true;
    }
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, `{"version":1,"pods":{${pods}}}`);
    renameSync(tmp, this.file);
  }
}
