/**
 * The NodeAgent custom resource (`nodelet.dev/v1alpha1`, cluster-scoped, one per node, named after
 * the Node) as the agent reads and writes it. The schema the API server enforces is
 * `crds/nodeagents.nodelet.dev.yaml`; these types follow it. `spec` arrives as untrusted JSON
 * (an older CRD, a hand-edited object) and is parsed by `settings.ts`, never cast.
 */
import { isRecord } from '../../util/is-record.js';

export const NODEAGENT_GROUP = 'nodelet.dev';
export const NODEAGENT_VERSION = 'v1alpha1';
export const NODEAGENT_PLURAL = 'nodeagents';
export const NODEAGENT_KIND = 'NodeAgent';
export const NODEAGENT_API_VERSION = `${NODEAGENT_GROUP}/${NODEAGENT_VERSION}`;

/** A condition in the shape of `metav1.Condition`. */
export interface NodeAgentCondition {
  readonly type: NodeAgentConditionType;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly observedGeneration?: number;
  /** RFC 3339, whole seconds. */
  readonly lastTransitionTime: string;
  readonly reason: string;
  readonly message: string;
}

/** The conditions the agent reports. */
export type NodeAgentConditionType = 'Ready' | 'RuntimeReady' | 'QueueReady' | 'APIReady' | 'SettingsApplied';

/** Job counts of the node's reconcile queue; `depth` is waiting + active (the printer column). */
export interface NodeAgentQueueStatus {
  readonly waiting: number;
  readonly active: number;
  readonly delayed: number;
  readonly failed: number;
  readonly depth: number;
}

/** What the agent reports about itself. */
export interface NodeAgentStatus {
  readonly observedGeneration?: number;
  readonly nodeName?: string;
  readonly conditions?: readonly NodeAgentCondition[];
  readonly pods?: number;
  readonly queue?: NodeAgentQueueStatus;
  readonly runtimeVersion?: string;
  readonly agentVersion?: string;
  readonly lastRelistTime?: string;
}

/** The object's metadata fields the agent uses. */
export interface NodeAgentMetadata {
  readonly name: string;
  readonly resourceVersion?: string;
  readonly generation?: number;
  readonly uid?: string;
  readonly creationTimestamp?: string;
}

/** A NodeAgent as read from the API server: `spec` untrusted, `status` as the agent last wrote it. */
export interface NodeAgent {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: NodeAgentMetadata;
  readonly spec?: unknown;
  readonly status?: NodeAgentStatus;
}

/** The object the agent creates for itself: empty spec, so every setting comes from its flags. */
export function newNodeAgent(name: string): NodeAgent {
  return { apiVersion: NODEAGENT_API_VERSION, kind: NODEAGENT_KIND, metadata: { name }, spec: {} };
}

/**
 * Reads an API answer as a NodeAgent; undefined when it lacks the name (not a NodeAgent at all).
 * Status is taken as written: only this agent writes it, through the schema.
 */
export function asNodeAgent(value: unknown): NodeAgent | undefined {
  if (!isRecord(value) || !isRecord(value.metadata)) return undefined;
  const { name, resourceVersion, generation, uid, creationTimestamp } = value.metadata;
  if (typeof name !== 'string' || name === '') return undefined;
  return {
    apiVersion: typeof value.apiVersion === 'string' ? value.apiVersion : NODEAGENT_API_VERSION,
    kind: typeof value.kind === 'string' ? value.kind : NODEAGENT_KIND,
    metadata: {
      name,
      resourceVersion: typeof resourceVersion === 'string' ? resourceVersion : undefined,
      generation: typeof generation === 'number' ? generation : undefined,
      uid: typeof uid === 'string' ? uid : undefined,
      creationTimestamp: typeof creationTimestamp === 'string' ? creationTimestamp : undefined,
    },
    spec: value.spec,
    status: isRecord(value.status) ? value.status : undefined,
  };
}
