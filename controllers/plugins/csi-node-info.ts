/**
 * The node's CSI driver records, as the kubelet's `nodeinfomanager` keeps them: on the Node, the
 * `csi.volume.kubernetes.io/nodeid` annotation (driver → node ID, JSON) and the driver's topology
 * segments as labels; the `CSINode` object of the same name (owned by the Node) lists each driver
 * with its node ID, topology keys and allocatable volume count. The decisions are pure functions
 * below; {@link createCsiNodeInfoApi} applies them over the API server, retrying conflicts.
 */
import type { V1CSINode, V1CSINodeDriver, V1Node } from '@kubernetes/client-node';
import { PatchType, segment, type KubeClient } from '../../kube/client.js';
import type { CsiNodeInfo } from '../../reconcilers/volumes/csi/types.js';
import { isConflict, isNotFound } from '../../util/api-errors.js';

export const NODE_ID_ANNOTATION = 'csi.volume.kubernetes.io/nodeid';
const MAX_INT32 = 2_147_483_647;
const ATTEMPTS = 5;

/** Installs and removes a driver's records. */
export interface CsiNodeInfoApi {
  /** @throws when a topology label collides with the Node's, or the API server fails */
  installDriver(driverName: string, info: CsiNodeInfo, signal?: AbortSignal): Promise<void>;
  uninstallDriver(driverName: string, signal?: AbortSignal): Promise<void>;
}

/** The driver's CSINode entry (`installDriverToCSINode`): topology keys sorted, a count only when positive. */
export function csiNodeDriverOf(driverName: string, info: CsiNodeInfo): V1CSINodeDriver {
  const count = Math.min(info.maxVolumesPerNode, MAX_INT32);
  return { name: driverName, nodeID: info.nodeId, topologyKeys: Object.keys(info.topology).sort(), ...(count > 0 ? { allocatable: { count } } : {}) };
}

/**
 * A CSINode's drivers. The API server sends an empty list as null (Go's nil slice; the field has no
 * omitempty), which is what a CSINode holds once its last driver went.
 */
export function driversOf(csiNode: V1CSINode): readonly V1CSINodeDriver[] {
  const drivers = csiNode.spec.drivers as readonly V1CSINodeDriver[] | null | undefined;
  return drivers ?? [];
}

/** The CSINode's drivers with this one installed, or undefined when it is there already as it should be. */
export function driversWith(drivers: readonly V1CSINodeDriver[], entry: V1CSINodeDriver): V1CSINodeDriver[] | undefined {
  const current = drivers.find((d) => d.name === entry.name);
  const same = current?.nodeID === entry.nodeID && JSON.stringify([...(current.topologyKeys ?? [])].sort()) === JSON.stringify(entry.topologyKeys ?? []) && current.allocatable?.count === entry.allocatable?.count;
  return same ? undefined : [...drivers.filter((d) => d.name !== entry.name), entry];
}

/** A topology segment the Node already carries with another value (`updateTopologyLabels`); undefined when none. */
export function topologyCollision(labels: Readonly<Record<string, string>>, topology: Readonly<Record<string, string>>): string | undefined {
  for (const [key, value] of Object.entries(topology)) {
    const current = labels[key];
    if (current !== undefined && current !== value) return `detected topology value collision: driver reported ${JSON.stringify(key)}:${JSON.stringify(value)} but existing label is ${JSON.stringify(key)}:${JSON.stringify(current)}`;
  }
  return undefined;
}

/** The node ID annotation's value with the driver set (or removed: `nodeId` undefined); undefined when it ends empty. */
export function nodeIdAnnotation(current: string | undefined, driverName: string, nodeId: string | undefined): string | undefined {
  let ids: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(current ?? '{}');
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) ids = { ...parsed };
  } catch {
    ids = {};
  }
  const rest = Object.fromEntries(Object.entries(ids).filter(([name]) => name !== driverName));
  const next = nodeId === undefined ? rest : { ...rest, [driverName]: nodeId };
  return Object.keys(next).length === 0 ? undefined : JSON.stringify(next);
}

async function retryConflicts(action: () => Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    signal?.throwIfAborted();
    try {
      await action();
      return;
    } catch (error) {
      if (!isConflict(error) || attempt >= ATTEMPTS) throw error;
    }
  }
}

export function createCsiNodeInfoApi(kube: KubeClient, nodeName: string): CsiNodeInfoApi {
  const nodePath = `/api/v1/nodes/${segment(nodeName)}`;
  const csiNodePath = `/apis/storage.k8s.io/v1/csinodes/${segment(nodeName)}`;
  const readCsiNode = async (signal?: AbortSignal): Promise<V1CSINode | undefined> => {
    try {
      return await kube.get<V1CSINode>(csiNodePath, undefined, signal);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };
  const patchNode = async (driverName: string, nodeId: string | undefined, labels: Readonly<Record<string, string>>): Promise<void> => {
    const node = await kube.get<V1Node>(nodePath);
    const annotation = nodeIdAnnotation(node.metadata?.annotations?.[NODE_ID_ANNOTATION], driverName, nodeId);
    await kube.patch(nodePath, { metadata: { labels, annotations: { [NODE_ID_ANNOTATION]: annotation ?? null } } }, PatchType.merge);
  };
  return {
    async installDriver(driverName, info, signal) {
      const node = await kube.get<V1Node>(nodePath, undefined, signal);
      const collision = topologyCollision(node.metadata?.labels ?? {}, info.topology);
      if (collision !== undefined) throw new Error(`error updating Node object with CSI driver node info: ${collision}`);
      await patchNode(driverName, info.nodeId, info.topology);
      const entry = csiNodeDriverOf(driverName, info);
      await retryConflicts(async () => {
        const csiNode = await readCsiNode(signal);
        if (csiNode === undefined) {
          const owner = { apiVersion: 'v1', kind: 'Node', name: nodeName, uid: node.metadata?.uid ?? '' };
          await kube.create(`/apis/storage.k8s.io/v1/csinodes`, { apiVersion: 'storage.k8s.io/v1', kind: 'CSINode', metadata: { name: nodeName, ownerReferences: [owner] }, spec: { drivers: [entry] } });
          return;
        }
        const drivers = driversWith(driversOf(csiNode), entry);
        if (drivers !== undefined) await kube.replace(csiNodePath, { ...csiNode, spec: { ...csiNode.spec, drivers } });
      }, signal);
    },
    async uninstallDriver(driverName, signal) {
      await retryConflicts(async () => {
        const csiNode = await readCsiNode(signal);
        if (csiNode === undefined || !driversOf(csiNode).some((d) => d.name === driverName)) return;
        await kube.replace(csiNodePath, { ...csiNode, spec: { ...csiNode.spec, drivers: driversOf(csiNode).filter((d) => d.name !== driverName) } });
      }, signal);
      await patchNode(driverName, undefined, {});
    },
  };
}
