/**
 * The node's heartbeat Lease in `kube-node-lease`, after the kubelet's nodelease controller: named
 * after the node, held by the node, `leaseDurationSeconds` 40, owned by the Node object (so it goes
 * when the Node goes), renewed by updating `renewTime`. The last written lease is cached so a renewal
 * is one PUT; a conflict or a vanished lease falls back to read-or-create.
 */
import type { V1Lease, V1OwnerReference } from '@kubernetes/client-node';
import { MicroTime } from '../../kube/client.js';
import type { CoordinationV1Client } from '../../kube/groups.js';
import { isConflict, isNotFound } from '../../util/api-errors.js';
import type { Clock } from '../../util/clock.js';

/** Namespace the control plane watches for node leases. */
export const NODE_LEASE_NAMESPACE = 'kube-node-lease';
/** The kubelet's default: a node whose lease is this old is considered gone. */
export const DEFAULT_LEASE_DURATION_SECONDS = 40;

/** The Lease calls nodelet makes (satisfied by {@link CoordinationV1Client}). */
export type LeaseApi = Pick<CoordinationV1Client, 'readNamespacedLease' | 'createNamespacedLease' | 'replaceNamespacedLease'>;

/** Options of {@link createNodeLease}. */
export interface NodeLeaseOptions {
  readonly api: LeaseApi;
  readonly nodeName: string;
  readonly leaseDurationSeconds?: number;
  readonly clock: Clock;
  /** UID of the Node object once known; the lease gets an owner reference to it. */
  readonly nodeUid: () => string | undefined;
}

/** The node's lease. */
export interface NodeLease {
  /** Creates the lease if missing, else moves its renewTime to now. Rejects on API failure. */
  renew(): Promise<V1Lease>;
}

function nodeOwnerReference(nodeName: string, uid: string): V1OwnerReference {
  return { apiVersion: 'v1', kind: 'Node', name: nodeName, uid };
}

/** Owner references with the Node's replaced by the current one (a re-created Node has a new UID). */
function ownedBy(
  refs: readonly V1OwnerReference[] | undefined,
  nodeName: string,
  uid: string | undefined,
): V1OwnerReference[] | undefined {
  if (uid === undefined) return refs ? [...refs] : undefined;
  const others = (refs ?? []).filter((ref) => !(ref.kind === 'Node' && ref.apiVersion === 'v1'));
  return [...others, nodeOwnerReference(nodeName, uid)];
}

/** The lease as it should be after renewing at `now`, keeping fields nodelet does not own. */
export function renewedLease(
  lease: V1Lease,
  options: { nodeName: string; durationSeconds: number; now: number; nodeUid: string | undefined },
): V1Lease {
  const ownerReferences = ownedBy(lease.metadata?.ownerReferences, options.nodeName, options.nodeUid);
  return {
    ...lease,
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      ...lease.metadata,
      name: options.nodeName,
      namespace: NODE_LEASE_NAMESPACE,
      ...(ownerReferences ? { ownerReferences } : {}),
    },
    spec: {
      ...lease.spec,
      holderIdentity: options.nodeName,
      leaseDurationSeconds: options.durationSeconds,
      // MicroTime: six fractional digits, as the API requires.
      renewTime: new MicroTime(options.now),
    },
  };
}

/** Creates the lease renewer; nothing is sent until `renew()`. */
export function createNodeLease(options: NodeLeaseOptions): NodeLease {
  const { api, nodeName, clock } = options;
  const durationSeconds = options.leaseDurationSeconds ?? DEFAULT_LEASE_DURATION_SECONDS;
  const namespace = NODE_LEASE_NAMESPACE;
  let cached: V1Lease | undefined;

  const renewed = (lease: V1Lease): V1Lease =>
    renewedLease(lease, { nodeName, durationSeconds, now: clock.now(), nodeUid: options.nodeUid() });

  async function readLease(): Promise<V1Lease | undefined> {
    try {
      return await api.readNamespacedLease({ name: nodeName, namespace });
    } catch (err: unknown) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async function readOrCreate(): Promise<V1Lease> {
    const current = await readLease();
    if (current) return api.replaceNamespacedLease({ name: nodeName, namespace, body: renewed(current) });
    return api.createNamespacedLease({ namespace, body: renewed({}) });
  }

  return {
    async renew(): Promise<V1Lease> {
      if (cached) {
        try {
          cached = await api.replaceNamespacedLease({ name: nodeName, namespace, body: renewed(cached) });
          return cached;
        } catch (err: unknown) {
          cached = undefined;
          // Someone else wrote it, or deleted it: start again from what the server has.
          if (!isConflict(err) && !isNotFound(err)) throw err;
        }
      }
      cached = await readOrCreate();
      return cached;
    },
  };
}
