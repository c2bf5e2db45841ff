/**
 * The wire side of the pod source: a client-node list+watch of the pods bound to one node, with a
 * liveness signal. client-node's `makeInformer` cannot pass a field selector, so this builds the same
 * `ListWatch` it would, with `fieldSelector=spec.nodeName=<node>` and a `Watch` that asks for
 * bookmarks, lets the server end each watch before client-node's 30 s inactivity timeout, and reports
 * every sign of life (watch accepted, any event, bookmarks included).
 */
import {
  CoreV1Api,
  ListWatch,
  Watch,
  type Informer,
  type KubeConfig,
  type KubernetesListObject,
  type ListPromise,
  type V1Pod,
} from '@kubernetes/client-node';

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

type WatchArgs = Parameters<Watch['watch']>;

/**
 * Server-side watch timeout. client-node aborts a watch after 30 s without a byte, before the API
 * server's first periodic bookmark (1 min), so on a quiet node the resourceVersion never advances and
 * the watch cache answers 410 Gone after a few minutes, forcing a relist. A watch that times out on
 * the server first gets a bookmark just before its deadline: the version stays fresh, and the informer
 * reconnects at once (a bookmark resets its reconnect delay).
 */
const WATCH_TIMEOUT_SECONDS = 25;

/** A watch that requests bookmarks and reports activity. */
export class ObservedWatch extends Watch {
  constructor(
    config: KubeConfig,
    private readonly observer: Pick<PodInformerOptions, 'onActivity' | 'isCurrent'>,
  ) {
    super(config);
  }

  override async watch(path: WatchArgs[0], queryParams: WatchArgs[1], callback: WatchArgs[2], done: WatchArgs[3]): Promise<AbortController> {
    // An object, not a let: the flag flips inside a callback, where control-flow analysis cannot see.
    const watchState = { ended: false };
    const controller = await super.watch(
      path,
      { timeoutSeconds: WATCH_TIMEOUT_SECONDS, ...queryParams, allowWatchBookmarks: true },
      (phase: string, apiObj: unknown, watchObj?: unknown) => {
        this.observer.onActivity();
        callback(phase, apiObj, watchObj);
      },
      (err: unknown) => {
        watchState.ended = true;
        done(err);
      },
    );
    // ListWatch.stop() cannot abort a watch still connecting; one that outlived its informer closes here.
    if (!this.observer.isCurrent()) controller.abort();
    // Returning without having ended means the API server answered 200: the watch is live.
    else if (!watchState.ended) this.observer.onActivity();
    return controller;
  }
}

/** The real transport for `nodeName`'s pods. */
export function createPodTransport(kubeConfig: KubeConfig, nodeName: string): PodTransport {
  const api = kubeConfig.makeApiClient(CoreV1Api);
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
      new ListWatch<V1Pod>('/api/v1/pods', new ObservedWatch(kubeConfig, observer), listPods, false, undefined, fieldSelector),
  };
}
