/**
 * Registering the Node, after the kubelet's registerWithAPIServer: create it with nodelet's labels,
 * annotations and taints; if it already exists, bring the labels and annotations nodelet owns up to
 * date with a merge patch that names only those keys, so what others set survives. Taints are only set at creation: under
 * NodeRestriction a node may not change its own taints.
 */
import type { V1Node, V1Taint } from '@kubernetes/client-node';
import { PatchType } from '../../kube/client.js';
import type { CoreV1Client } from '../../kube/core-v1.js';
import type { Logger } from 'pino';
import { isAlreadyExists } from '../../util/api-errors.js';
import { labelsToReconcile } from './labels.js';

/** The Node calls nodelet makes (satisfied by {@link CoreV1Client}). */
export type NodeApi = Pick<CoreV1Client, 'createNode' | 'readNode' | 'patchNode' | 'patchNodeStatus'>;

/** What the Node object is created with. */
export interface NodeSpecInput {
  readonly nodeName: string;
  /** Every label nodelet owns: defaults plus configured ones. */
  readonly labels: Readonly<Record<string, string>>;
  /** Annotations nodelet owns (its Redis password's hash); none by default. */
  readonly annotations?: Readonly<Record<string, string>>;
  readonly taints: readonly V1Taint[];
}

/** The Node object nodelet creates (status follows in a separate patch). */
export function buildNode(input: NodeSpecInput): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: input.nodeName, labels: { ...input.labels }, ...(input.annotations === undefined || Object.keys(input.annotations).length === 0 ? {} : { annotations: { ...input.annotations } }) },
    spec: input.taints.length > 0 ? { taints: [...input.taints] } : {},
  };
}

/**
 * The steps of the node's startup, as the kubelet's startup latency tracker hears them
 * (`kubelet_node_startup_*`); each call after the first of its kind does nothing. Must not throw.
 */
export interface NodeStartupMetrics {
  /** The agent tries to register the Node. */
  registrationAttempted(): void;
  /** It created the Node (not: found it already there). */
  registeredNewNode(): void;
  /** A status with Ready true reached the API. */
  nodeReady(): void;
}

/** Options of {@link registerNode}. */
export interface RegisterNodeOptions extends NodeSpecInput {
  readonly api: NodeApi;
  readonly logger: Logger;
  /** Hears the attempt and a creation; absent: not measured. */
  readonly startup?: NodeStartupMetrics;
}

function missingTaints(node: V1Node, wanted: readonly V1Taint[]): V1Taint[] {
  const present = node.spec?.taints ?? [];
  return wanted.filter((t) => !present.some((p) => p.key === t.key && p.effect === t.effect && p.value === t.value));
}

/** Brings the owned labels of an existing Node up to date; returns the Node as the server has it. */
async function reconcileExisting(options: RegisterNodeOptions): Promise<V1Node> {
  const { api, nodeName, logger } = options;
  const existing = await api.readNode({ name: nodeName });
  const absentTaints = missingTaints(existing, options.taints);
  if (absentTaints.length > 0) {
    logger.warn({ node: nodeName, taints: absentTaints }, 'existing node lacks configured taints; a node may not add its own');
  }
  const labels = labelsToReconcile(existing.metadata?.labels, options.labels);
  const annotations = labelsToReconcile(existing.metadata?.annotations, options.annotations ?? {});
  if (Object.keys(labels).length === 0 && Object.keys(annotations).length === 0) return existing;
  logger.info({ node: nodeName, labels, annotations: Object.keys(annotations) }, 'updating labels and annotations nodelet owns on the existing node');
  return api.patchNode(
    { name: nodeName, body: { metadata: { labels, annotations } } },
    PatchType.merge,
  );
}

/** Creates the Node, or adopts and reconciles an existing one. Rejects on any other API failure. */
export async function registerNode(options: RegisterNodeOptions): Promise<V1Node> {
  options.startup?.registrationAttempted();
  try {
    const created = await options.api.createNode({ body: buildNode(options) });
    options.startup?.registeredNewNode();
    options.logger.info({ node: options.nodeName, uid: created.metadata?.uid }, 'registered node');
    return created;
  } catch (err: unknown) {
    if (!isAlreadyExists(err)) throw err;
  }
  return reconcileExisting(options);
}
