/**
 * Static pods: a manifest file's pod with the kubelet's defaults applied (kubelet
 * `pkg/kubelet/config/common.go`, `applyDefaults`), so nodelet names and identifies them as the
 * kubelet does and a mirror pod written by either looks the same:
 *
 * - name `<name>-<node name>` (node name lower-cased), namespace `default` when unset;
 * - UID, when the manifest sets none: an MD5 over the parsed pod, the node name and the file path
 *   (for a `--manifest-url` pod: over the pod and the URL only, as the kubelet), so the same file
 *   on the same node always yields the same UID, and any edit yields a new one (the old pod is
 *   stopped, the new one started: static pods are never updated in place);
 * - annotations `kubernetes.io/config.hash` (= the UID), `kubernetes.io/config.source: file` (or
 *   `http`), `kubernetes.io/config.seen` (when the file or URL was read);
 * - `spec.nodeName` = this node, and a toleration of every NoExecute taint, so node problems never
 *   evict a static pod.
 *
 * A manifest that does not parse, or is not a valid pod, is a {@link ManifestError}: the kubelet
 * logs it and skips the file, and so does the file source. A URL's body may also be a `v1`
 * `PodList` ({@link parseManifestBody}); one invalid pod in it refuses the whole body.
 */
import { createHash } from 'node:crypto';
import type { V1Pod } from '@kubernetes/client-node';
import { load as loadYaml } from 'js-yaml';
import { isRecord } from '../../util/is-record.js';

export const ANNOTATION_CONFIG_HASH = 'kubernetes.io/config.hash';
export const ANNOTATION_CONFIG_SOURCE = 'kubernetes.io/config.source';
export const ANNOTATION_CONFIG_SEEN = 'kubernetes.io/config.seen';
export const ANNOTATION_CONFIG_MIRROR = 'kubernetes.io/config.mirror';

/** A manifest file (or URL body) that is not a valid pod; the file is skipped. */
export class ManifestError extends Error {
  override readonly name = 'ManifestError';
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super(`manifest ${file}: ${reason}`);
  }
}

export function isManifestError(err: unknown): err is ManifestError {
  return err instanceof ManifestError;
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** The first problem of a parsed manifest as a pod, undefined when it is one nodelet can run. */
function podProblem(doc: Record<string, unknown>): string | undefined {
  if (doc.apiVersion !== 'v1' || doc.kind !== 'Pod') return 'not a v1 Pod (apiVersion/kind)';
  const metadata = doc.metadata;
  if (!isRecord(metadata) || typeof metadata.name !== 'string' || !DNS_SUBDOMAIN.test(metadata.name)) return 'metadata.name missing or not a DNS subdomain';
  if (metadata.namespace !== undefined && (typeof metadata.namespace !== 'string' || !DNS_LABEL.test(metadata.namespace))) return 'metadata.namespace is not a DNS label';
  const spec = doc.spec;
  if (!isRecord(spec) || !Array.isArray(spec.containers) || spec.containers.length === 0) return 'spec.containers must list at least one container';
  return containersProblem([...(spec.containers as unknown[]), ...(Array.isArray(spec.initContainers) ? (spec.initContainers as unknown[]) : [])]);
}

function containersProblem(containers: readonly unknown[]): string | undefined {
  const names = new Set<string>();
  for (const c of containers) {
    if (!isRecord(c) || typeof c.name !== 'string' || !DNS_LABEL.test(c.name)) return 'a container has no valid name';
    if (typeof c.image !== 'string' || c.image === '') return `container ${c.name} has no image`;
    if (names.has(c.name)) return `container name ${c.name} is used twice`;
    names.add(c.name);
  }
  return undefined;
}

/** Parses a manifest (YAML or JSON: JSON is YAML) into a pod; throws {@link ManifestError}. */
export function parseManifest(file: string, text: string): V1Pod {
  let doc: unknown;
  try {
    doc = loadYaml(text);
  } catch (err: unknown) {
    throw new ManifestError(file, `does not parse: ${err instanceof Error ? err.message.split('\n')[0] ?? '' : String(err)}`);
  }
  if (!isRecord(doc)) throw new ManifestError(file, 'is not an object');
  const problem = podProblem(doc);
  if (problem !== undefined) throw new ManifestError(file, problem);
  return doc;
}

/**
 * Parses a body that is one pod or a `v1` `PodList` (a URL's body, YAML or JSON) into its pods;
 * throws {@link ManifestError} when it is neither, when any pod in the list is invalid, or when two
 * pods share a name (the whole body is refused: no half-applied list).
 */
export function parseManifestBody(origin: string, text: string): V1Pod[] {
  let doc: unknown;
  try {
    doc = loadYaml(text);
  } catch (err: unknown) {
    throw new ManifestError(origin, `does not parse: ${err instanceof Error ? err.message.split('\n')[0] ?? '' : String(err)}`);
  }
  if (!isRecord(doc) || doc.kind !== 'PodList') return [parseManifest(origin, text)];
  if (doc.apiVersion !== 'v1' || !Array.isArray(doc.items)) throw new ManifestError(origin, 'not a v1 PodList with items');
  const pods = (doc.items as unknown[]).map((item, i): V1Pod => {
    // A list's items may leave apiVersion and kind out (the API server's lists do).
    const pod = isRecord(item) ? { ...item, apiVersion: item.apiVersion ?? 'v1', kind: item.kind ?? 'Pod' } : undefined;
    const problem = pod === undefined ? 'is not an object' : podProblem(pod);
    if (pod === undefined || problem !== undefined) throw new ManifestError(origin, `items[${i}]: ${problem ?? ''}`);
    return pod as V1Pod; // podProblem checked the shape nodelet relies on
  });
  const names = new Set<string>();
  for (const pod of pods) {
    const name = `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? ''}`;
    if (names.has(name)) throw new ManifestError(origin, `the pod ${name} is listed twice`);
    names.add(name);
  }
  return pods;
}

/** JSON with object keys sorted at every level: equal pods, equal text. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isRecord(value)) {
    const keys = Object.keys(value).filter((k) => value[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The static pod's UID: stable for the same pod, node and file; new after any edit. */
export function staticPodUid(pod: V1Pod, nodeName: string, file: string): string {
  return createHash('md5').update(canonicalJson(pod)).update(`host:${nodeName}`).update(`file:${file}`).digest('hex');
}

/** A `--manifest-url` pod's UID: the kubelet hashes the pod and the URL only (no node name). */
export function urlPodUid(pod: V1Pod, url: string): string {
  return createHash('md5').update(canonicalJson(pod)).update(`url:${url}`).digest('hex');
}

/** Where a static pod came from: a manifest file, or the body of `--manifest-url`. */
export type StaticPodOrigin = { readonly file: string } | { readonly url: string };

/** Options of {@link applyStaticPodDefaults}. */
export type StaticPodContext = StaticPodOrigin & {
  readonly nodeName: string;
  /** When the file or URL was read, for `kubernetes.io/config.seen`. */
  readonly seenAt: Date;
};

/** The manifest's pod as the node runs it (see this file's header). Does not modify `manifest`. */
export function applyStaticPodDefaults(manifest: V1Pod, context: StaticPodContext): V1Pod {
  const { nodeName } = context;
  const metadata = manifest.metadata ?? {};
  const derived = 'url' in context ? urlPodUid(manifest, context.url) : staticPodUid(manifest, nodeName, context.file);
  const uid = metadata.uid !== undefined && metadata.uid !== '' ? metadata.uid : derived;
  const spec = manifest.spec ?? { containers: [] };
  const tolerations = (spec.tolerations ?? []).filter((t) => !(t.operator === 'Exists' && t.effect === 'NoExecute' && (t.key ?? '') === ''));
  return {
    ...manifest,
    metadata: {
      ...metadata,
      name: `${metadata.name ?? ''}-${nodeName.toLowerCase()}`,
      namespace: metadata.namespace ?? 'default',
      uid,
      annotations: {
        ...metadata.annotations,
        [ANNOTATION_CONFIG_HASH]: uid,
        [ANNOTATION_CONFIG_SOURCE]: 'url' in context ? 'http' : 'file',
        [ANNOTATION_CONFIG_SEEN]: context.seenAt.toISOString(),
      },
    },
    spec: { ...spec, nodeName, tolerations: [...tolerations, { operator: 'Exists', effect: 'NoExecute' }] },
    status: { phase: 'Pending' },
  };
}

/** True for a pod from a manifest file (or URL): the API never holds it, only its mirror pod. */
export function isStaticPod(pod: V1Pod): boolean {
  const source = pod.metadata?.annotations?.[ANNOTATION_CONFIG_SOURCE];
  return source !== undefined && source !== 'api';
}

/** True for a mirror pod: the API's shadow of a static pod, never run itself. */
export function isMirrorPod(pod: V1Pod): boolean {
  return pod.metadata?.annotations?.[ANNOTATION_CONFIG_MIRROR] !== undefined;
}
