/**
 * Whether a pod may run on this node by its own choosing: `nodeSelector` (every label equal) and
 * the required node affinity (any term of `requiredDuringSchedulingIgnoredDuringExecution`
 * matching), as the scheduler's `nodeaffinity` plugin and the kubelet's admission check them
 * (component-helpers' `GetRequiredNodeAffinity(pod).Match(node)`). Preferred terms are scoring
 * only and play no part here.
 */
import type { V1Node, V1NodeSelectorRequirement, V1NodeSelectorTerm, V1Pod } from '@kubernetes/client-node';

type Labels = Readonly<Record<string, string>>;

/** `Gt`/`Lt` compare integers; a value that is not one never matches. */
function integerOf(text: string | undefined): bigint | undefined {
  if (text === undefined || !/^[+-]?\d+$/.test(text)) return undefined;
  return BigInt(text);
}

function compare(actual: string | undefined, wanted: readonly string[], op: 'Gt' | 'Lt'): boolean {
  const have = integerOf(actual);
  const bound = wanted.length === 1 ? integerOf(wanted[0]) : undefined;
  if (have === undefined || bound === undefined) return false;
  return op === 'Gt' ? have > bound : have < bound;
}

/** One requirement against a set of labels (or of fields). An unknown operator never matches. */
export function requirementMatches(requirement: V1NodeSelectorRequirement, labels: Labels): boolean {
  const values = requirement.values ?? [];
  const has = Object.prototype.hasOwnProperty.call(labels, requirement.key);
  const value = has ? labels[requirement.key] : undefined;
  switch (requirement.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    case 'Gt':
    case 'Lt':
      return compare(value, values, requirement.operator);
    default:
      return false;
  }
}

/** A term matches when it says something and all of it holds; an empty term matches nothing. */
function termMatches(term: V1NodeSelectorTerm, labels: Labels, fields: Labels): boolean {
  const expressions = term.matchExpressions ?? [];
  const matchFields = term.matchFields ?? [];
  if (expressions.length === 0 && matchFields.length === 0) return false;
  return expressions.every((r) => requirementMatches(r, labels)) && matchFields.every((r) => requirementMatches(r, fields));
}

/** True when the node satisfies the pod's `nodeSelector` and required node affinity. */
export function matchesNodeSelectorAndAffinity(pod: V1Pod, node: V1Node): boolean {
  const labels: Labels = node.metadata?.labels ?? {};
  for (const [key, value] of Object.entries(pod.spec?.nodeSelector ?? {})) {
    if (labels[key] !== value) return false;
  }
  const required = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required === undefined) return true;
  // The only field a node selector may name.
  const fields: Labels = { 'metadata.name': node.metadata?.name ?? '' };
  return required.nodeSelectorTerms.some((term) => termMatches(term, labels, fields));
}
