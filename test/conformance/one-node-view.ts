/**
 * What the node e2e suite (`e2e_node.test`) may see of the cluster's nodes. That suite assumes the
 * cluster it talks to has exactly one node, the one under test: its setup lists the nodes, fails
 * when there are more than one and takes the first as the node under test, and its
 * `getLocalNode` (e2enode.GetReadySchedulableNodes) wants exactly one untainted node. The test
 * cluster has two (nodelet's and the kubelet's, `npm run kubelet:up`), and the kubelet's carries the
 * harness's bench taint, which keeps the scheduler's pods off it.
 *
 * Pure: one-node-proxy.ts applies it to the API server's answers to the suite, and nothing else
 * sees the change. Node lists and node watch events keep only the node under test; that node loses
 * the hidden taints (the bench taint only: every node e2e test pod names its node itself, so no
 * scheduler decision depends on it). Every other object passes unchanged.
 */

/** The node the suite runs against, and the taint keys it must not see on it. */
export interface OneNodeView {
  readonly node: string;
  readonly hiddenTaints: ReadonlySet<string>;
}

interface NodeLike {
  readonly kind?: string;
  readonly metadata?: { readonly name?: string };
  readonly spec?: { readonly taints?: readonly { readonly key?: string }[] };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function nameOf(node: NodeLike): string | undefined {
  return node.metadata?.name;
}

/** The node without the hidden taints (the same object when it has none of them). */
export function withoutHiddenTaints(node: unknown, view: OneNodeView): unknown {
  if (!isObject(node)) return node;
  const spec = (node as NodeLike).spec;
  const taints = spec?.taints;
  if (!taints?.some((t) => t.key !== undefined && view.hiddenTaints.has(t.key))) return node;
  const kept = taints.filter((t) => t.key === undefined || !view.hiddenTaints.has(t.key));
  const { taints: _dropped, ...restOfSpec } = spec as Record<string, unknown>;
  return { ...node, spec: kept.length > 0 ? { ...restOfSpec, taints: kept } : restOfSpec };
}

/**
 * A decoded answer to a GET of nodes: a NodeList keeps the node under test only (without the hidden
 * taints), a Node is returned without the hidden taints, anything else (a Status, a Table) as is.
 */
export function viewOfNodeResponse(body: unknown, view: OneNodeView): unknown {
  if (!isObject(body)) return body;
  if (body.kind === 'NodeList' && Array.isArray(body.items)) {
    const items = (body.items as unknown[])
      .filter((n) => isObject(n) && nameOf(n as NodeLike) === view.node)
      .map((n) => withoutHiddenTaints(n, view));
    return { ...body, items };
  }
  if (body.kind === 'Node') return withoutHiddenTaints(body, view);
  return body;
}

/**
 * One decoded event of a node watch: undefined (drop it) when it is about another node, else the
 * event with the node under test shown without the hidden taints. BOOKMARK and ERROR events pass.
 */
export function viewOfNodeWatchEvent(event: unknown, view: OneNodeView): unknown {
  if (!isObject(event) || !isObject(event.object)) return event;
  const object = event.object as NodeLike;
  if (object.kind !== 'Node' || event.type === 'BOOKMARK') return event;
  if (nameOf(object) !== view.node) return undefined;
  return { ...event, object: withoutHiddenTaints(object, view) };
}

/** How a request path concerns nodes: a list or watch of all nodes, one node, or not at all. */
export type NodeRequest = { readonly kind: 'collection'; readonly watch: boolean } | { readonly kind: 'one'; readonly name: string } | { readonly kind: 'other' };

/**
 * Classifies a GET by its URL (path and query): `/api/v1/nodes` (a watch with `watch=true|1`),
 * `/api/v1/watch/nodes`, `/api/v1/nodes/<name>`. Subresources (`/status`, `/proxy/...`) are other.
 */
export function classifyNodeRequest(url: string): NodeRequest {
  const parsed = new URL(url, 'http://apiserver');
  const watchParam = parsed.searchParams.get('watch');
  const watch = watchParam === 'true' || watchParam === '1';
  const path = parsed.pathname.replace(/\/+$/, '');
  if (path === '/api/v1/nodes') return { kind: 'collection', watch };
  if (path === '/api/v1/watch/nodes') return { kind: 'collection', watch: true };
  const one = /^\/api\/v1\/nodes\/([^/]+)$/.exec(path);
  if (one?.[1] !== undefined && !watch) return { kind: 'one', name: decodeURIComponent(one[1]) };
  return { kind: 'other' };
}
