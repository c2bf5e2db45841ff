/**
 * The `clusterTrustBundle` source of a projected volume (the kubelet's ClusterTrustBundleProjection,
 * GA and on in 1.37): one file of PEM certificates taken from ClusterTrustBundle objects
 * (certificates.k8s.io/v1), either the one named, or every one of a signer whose labels match the
 * selector (a missing selector matches none, an empty one all). As the kubelet's manager does, the
 * certificates of the chosen bundles are decoded, deduplicated and written again as `CERTIFICATE`
 * blocks; the kubelet shuffles their order once per start so nobody relies on it, nodelet orders
 * them by their bytes. An `optional` source whose bundle is missing (or whose signer and selector
 * match none) gives an empty file; otherwise that is an error and the volume does not mount.
 */
import type { V1ClusterTrustBundleProjection, V1LabelSelector, V1LabelSelectorRequirement } from '@kubernetes/client-node';

/** What the projection needs of a ClusterTrustBundle. */
export interface TrustBundle {
  readonly name: string;
  readonly signerName: string;
  readonly labels: Readonly<Record<string, string>>;
  /** PEM text. */
  readonly trustBundle: string;
}

/** Reads ClusterTrustBundles. */
export interface TrustBundleApi {
  /** @returns the bundle, or undefined when it does not exist. Other failures throw. */
  readClusterTrustBundle(name: string): Promise<TrustBundle | undefined>;
  /** Every bundle whose labels match `labelSelector` (the API's selector syntax; empty: all). */
  listClusterTrustBundles(labelSelector: string): Promise<TrustBundle[]>;
}

const PEM_BLOCK = /-----BEGIN ([^-\r\n]+)-----\r?\n([\s\S]*?)-----END \1-----/g;

/** The DER bytes (base64) of every PEM block of `pem`, whatever its type, as Go's pem.Decode finds them. */
function pemBlocks(pem: string): string[] {
  return [...pem.matchAll(PEM_BLOCK)].flatMap((m) => {
    const body = (m[2] ?? '').split(/\r?\n/).filter((line) => !line.includes(':')).join('');
    return [Buffer.from(body, 'base64').toString('base64')];
  });
}

function pemCertificate(derBase64: string): string {
  const lines = derBase64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}

/** The bundles' certificates, deduplicated, as one PEM file. */
export function normalizeTrustAnchors(bundles: readonly TrustBundle[]): string {
  const unique = new Set(bundles.flatMap((b) => pemBlocks(b.trustBundle)));
  return [...unique].sort().map(pemCertificate).join('');
}

function requirementString(r: V1LabelSelectorRequirement): string {
  const values = [...(r.values ?? [])].sort().join(',');
  switch (r.operator) {
    case 'In':
      return `${r.key} in (${values})`;
    case 'NotIn':
      return `${r.key} notin (${values})`;
    case 'Exists':
      return r.key;
    case 'DoesNotExist':
      return `!${r.key}`;
    default:
      throw new Error(`label selector operator ${JSON.stringify(r.operator)} is not valid`);
  }
}

/** A LabelSelector in the API's query syntax; undefined for no selector (which matches nothing). */
export function labelSelectorQuery(selector: V1LabelSelector | undefined): string | undefined {
  if (selector === undefined) return undefined;
  const labels = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  return [...labels, ...(selector.matchExpressions ?? []).map(requirementString)].join(',');
}

async function bundlesOf(api: TrustBundleApi, source: V1ClusterTrustBundleProjection): Promise<TrustBundle[]> {
  if (source.name !== undefined) {
    const bundle = await api.readClusterTrustBundle(source.name);
    if (bundle === undefined && source.optional !== true) throw new Error(`while getting ClusterTrustBundle: clustertrustbundles.certificates.k8s.io "${source.name}" not found`);
    return bundle === undefined ? [] : [bundle];
  }
  if (source.signerName === undefined) throw new Error('ClusterTrustBundle projection requires either name or signerName to be set');
  const query = labelSelectorQuery(source.labelSelector);
  const listed = query === undefined ? [] : await api.listClusterTrustBundles(query);
  const matched = listed.filter((b) => b.signerName === source.signerName);
  if (matched.length === 0 && source.optional !== true) throw new Error('combination of signerName and labelSelector matched zero ClusterTrustBundles');
  return matched;
}

/** The projected file's content. @throws Error with the kubelet's message when a required bundle is missing. */
export async function clusterTrustBundleContent(api: TrustBundleApi, source: V1ClusterTrustBundleProjection): Promise<string> {
  return normalizeTrustAnchors(await bundlesOf(api, source));
}
