/**
 * The wire side of the pod source: a list+watch informer of the pods bound to one node
 * (`fieldSelector=spec.nodeName=<node>`), with a liveness signal: its watches ask for bookmarks,
 * let the server end each watch before the client's 30 s inactivity timeout, and report every sign
 * of life (watch accepted, any event, bookmarks included).
 */
import type { Informer, KubernetesListObject, ListPromise, V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from '../../kube/client.js';
import { CoreV1Client } from '../../kube/core-v1.js';
import { ListWatchInformer, type WatchSource } from '../../kube/informer.js';
import type { Query, WatchHandlers } from '../../kube/transport.js';

/** How the pod source reaches the API server (a seam: unit tests pass a fake). */
export interface PodTransport {
  /** Lists the node's pods across all namespaces. */
  list(): Promise<KubernetesListObject<V1Pod>>;
  /** Reads one of the node's pods straight from the API server; undefined when it has none by that name. */
  get(namespace: string, name: string): Promise<V1Pod | undefined>;
  /** A stopped informer; see {@link PodInformerOptions}. */
  informer(options: PodInformerOptions): Informer<V1Pod>;
}

/** How the pod source wires one informer. */
export interface PodInformerOptions {
  /** Lists the pods (the informer calls it on start and after 410 Gone). */
  readonly listPods: ListPromise<V1Pod>;
  /** Called whenever the watch shows life: accepted by the server, or any event, bookmarks included. */
  readonly onActivity: () => void;
  /** False once the informer was replaced: a watch it opens after that is closed at once. */
  readonly isCurrent: () => boolean;
}

/**
 * Server-side watch timeout. The client drops a watch after 30 s without a byte, before the API
 * server's first periodic bookmark (1 min), so on a quiet node the resourceVersion would never
 * advance and the watch cache would answer 410 Gone after a few minutes, forcing a relist. A watch
 * that times out on the server first gets a bookmark just before its deadline: the version stays
 * fresh, and the informer reconnects at once (a bookmark resets its reconnect delay).
 */
export const WATCH_TIMEOUT_SECONDS = 25;

/** Watches that request bookmarks, end on the server's side first, and report activity. */
export class ObservedWatch implements WatchSource {
  constructor(
    private readonly source: WatchSource,
    private readonly observer: Pick<PodInformerOptions, 'onActivity' | 'isCurrent'>,
  ) {}

  async watch(path: string, query: Query, handlers: WatchHandlers): Promise<AbortController> {
    // An object, not a let: the flag flips inside a callback, where control-flow analysis cannot see.
    const watchState = { ended: false };
    const controller = await this.source.watch(path, { timeoutSeconds: WATCH_TIMEOUT_SECONDS, ...query, allowWatchBookmarks: true }, {
      onEvent: (type, object) => {
        this.observer.onActivity();
        handlers.onEvent(type, object);
      },
      onDone: (err) => {
        watchState.ended = true;
        handlers.onDone(err);
      },
    });
    // A watch still connecting when its informer was replaced closes here.
    if (!this.observer.isCurrent()) controller.abort();
    // Returning without having ended means the API server answered 200: the watch is live.
    else if (!watchState.ended) this.observer.onActivity();
    return controller;
  }
}

/** The real transport for `nodeName`'s pods. */
export function createPodTransport(kube: KubeClient, nodeName: string): PodTransport {
  const api = new CoreV1Client(kube);
  const fieldSelector = `spec.nodeName=${nodeName}`;
  return {
    list: () => api.listPodForAllNamespaces({ fieldSelector }),
    // A list, not a get: a node's identity may list its own pods by field selector, but the Node
    // authorizer refuses a get of a pod that no longer exists (no relationship to the node).
    get: async (namespace, name) => {
      const list = await api.listNamespacedPod({ namespace, fieldSelector: `${fieldSelector},metadata.name=${name}` });
      return list.items[0];
    },
    informer: ({ listPods, ...observer }) =>
      new ListWatchInformer<V1Pod>({ path: '/api/v1/pods', list: listPods, watch: new ObservedWatch(kube.transport, observer), fieldSelector }),
  };
}
