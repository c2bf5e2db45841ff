/**
 * In-memory stand-ins for the Node and Lease API calls the node controller makes, for unit tests:
 * they keep objects, bump resource versions, answer with the API server's error codes, record
 * calls, and fail on demand. Production code never imports this file.
 */
import { ApiException, type V1Lease, type V1Node, type V1NodeCondition } from '@kubernetes/client-node';
import type { LeaseApi } from '../../controllers/node/lease.js';
import type { NodeApi } from '../../controllers/node/registration.js';

/** An error shaped like the API server's answer (`Status` JSON body). */
export function apiError(code: number, reason: string): ApiException<string> {
  const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, code });
  return new ApiException(code, `HTTP-Code: ${code}`, body, {});
}

interface Failures {
  /** Errors thrown by the next calls of a method, one per call, in order. */
  readonly failNext: (method: string, ...errors: Error[]) => void;
}

function createFailures(): Failures & { readonly take: (method: string) => void } {
  const queued = new Map<string, Error[]>();
  return {
    failNext(method, ...errors) {
      queued.set(method, [...(queued.get(method) ?? []), ...errors]);
    },
    take(method) {
      const error = queued.get(method)?.shift();
      if (error) throw error;
    },
  };
}

/** A fake node API with its stored nodes and call log. */
export interface FakeNodeApi extends NodeApi, Failures {
  readonly nodes: Map<string, V1Node>;
  readonly calls: string[];
}

function mergeConditions(
  before: readonly V1NodeCondition[] | undefined,
  patch: readonly V1NodeCondition[] | undefined,
): V1NodeCondition[] | undefined {
  if (!patch) return before ? [...before] : undefined;
  const merged = (before ?? []).filter((c) => !patch.some((p) => p.type === c.type));
  return [...merged, ...patch];
}

/** Creates an empty fake node API. */
export function createFakeNodeApi(): FakeNodeApi {
  const nodes = new Map<string, V1Node>();
  const calls: string[] = [];
  const failures = createFailures();
  let version = 0;
  let uid = 0;

  function stored(name: string): V1Node {
    const node = nodes.get(name);
    if (!node) throw apiError(404, 'NotFound');
    return node;
  }

  function save(node: V1Node): V1Node {
    const next = { ...node, metadata: { ...node.metadata, resourceVersion: String(++version) } };
    nodes.set(next.metadata.name ?? '', next);
    return structuredClone(next);
  }

  function enter(method: string): void {
    calls.push(method);
    failures.take(method);
  }

  return {
    nodes,
    calls,
    failNext: failures.failNext,
    createNode({ body }) {
      enter('createNode');
      const name = body.metadata?.name ?? '';
      if (nodes.has(name)) return Promise.reject(apiError(409, 'AlreadyExists'));
      return Promise.resolve(save({ ...structuredClone(body), metadata: { ...body.metadata, uid: `uid-${++uid}` } }));
    },
    readNode({ name }) {
      enter('readNode');
      return Promise.resolve(structuredClone(stored(name)));
    },
    patchNode({ name, body }) {
      enter('patchNode');
      const node = stored(name);
      // A merge patch of metadata: the keys it names replace, the others stay.
      const { labels, annotations } = (body as { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> } }).metadata ?? {};
      return Promise.resolve(save({ ...node, metadata: { ...node.metadata, labels: { ...node.metadata?.labels, ...labels }, ...(annotations === undefined ? {} : { annotations: { ...node.metadata?.annotations, ...annotations } }) } }));
    },
    patchNodeStatus({ name, body }) {
      enter('patchNodeStatus');
      const node = stored(name);
      const status = structuredClone((body as { status: V1Node['status'] }).status);
      const conditions = mergeConditions(node.status?.conditions, status?.conditions);
      return Promise.resolve(save({ ...node, status: { ...node.status, ...status, conditions } }));
    },
  };
}

/** A fake lease API with its stored leases (keyed `namespace/name`) and call log. */
export interface FakeLeaseApi extends LeaseApi, Failures {
  readonly leases: Map<string, V1Lease>;
  readonly calls: string[];
}

/** Creates an empty fake lease API enforcing optimistic concurrency on replace. */
export function createFakeLeaseApi(): FakeLeaseApi {
  const leases = new Map<string, V1Lease>();
  const calls: string[] = [];
  const failures = createFailures();
  let version = 0;

  function save(key: string, lease: V1Lease): V1Lease {
    const next = { ...structuredClone(lease), metadata: { ...lease.metadata, resourceVersion: String(++version) } };
    leases.set(key, next);
    return structuredClone(next);
  }

  function enter(method: string): void {
    calls.push(method);
    failures.take(method);
  }

  return {
    leases,
    calls,
    failNext: failures.failNext,
    readNamespacedLease({ name, namespace }) {
      enter('readNamespacedLease');
      const lease = leases.get(`${namespace}/${name}`);
      return lease ? Promise.resolve(structuredClone(lease)) : Promise.reject(apiError(404, 'NotFound'));
    },
    createNamespacedLease({ namespace, body }) {
      enter('createNamespacedLease');
      const key = `${namespace}/${body.metadata?.name ?? ''}`;
      if (leases.has(key)) return Promise.reject(apiError(409, 'AlreadyExists'));
      return Promise.resolve(save(key, body));
    },
    replaceNamespacedLease({ name, namespace, body }) {
      enter('replaceNamespacedLease');
      const key = `${namespace}/${name}`;
      const current = leases.get(key);
      if (!current) return Promise.reject(apiError(404, 'NotFound'));
      if (body.metadata?.resourceVersion !== current.metadata?.resourceVersion) {
        return Promise.reject(apiError(409, 'Conflict'));
      }
      return Promise.resolve(save(key, body));
    },
  };
}
