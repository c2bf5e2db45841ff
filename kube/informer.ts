/**
 * A list+watch cache of one resource: the informer client-node's `ListWatch` is, on this package's
 * transport (loading client-node's `ListWatch` loads undici and its request layer; see
 * transport.ts). It implements client-node's `Informer` and `ObjectCache` types, so the pod and
 * service sources keep their seams, and keeps `ListWatch`'s behaviour they were built on:
 *
 * - `start()` lists (unless it holds a resourceVersion) and opens a watch from the list's version;
 *   it resolves once the watch is open or the attempt failed;
 * - a watch that ends is reopened from the last version seen (bookmarks included); one that ended
 *   without any event waits 1 s, doubling to 30 s, each wait spread over [d, 2d) by a jitter of 1.0
 *   (client-go's reflector backs off with `wait.Jitter` 1.0, so the informers of a fleet whose
 *   API server went away do not come back in step); one dropped for inactivity reopens at once;
 * - 410 Gone (as a status or as an ERROR event) forgets the version: the next open relists, after
 *   a jittered wait of 1–2 s (see `pause`), and objects missing from the new list are reported deleted;
 * - any other failure, of the list or the watch, is reported to the `error` handlers and the
 *   informer stops: whoever owns it decides when to start again.
 */
import type { Informer, KubernetesListObject, KubernetesObject, ObjectCache } from '@kubernetes/client-node';
import { isGone, watchErrorStatusCode } from '../util/api-errors.js';
import { jittered } from '../util/backoff.js';
import { systemClock, type Clock } from '../util/clock.js';
import { WatchTimeoutError, type Query, type WatchHandlers } from './transport.js';

/** What the informer needs of the transport. */
export interface WatchSource {
  watch(path: string, query: Query, handlers: WatchHandlers): Promise<AbortController>;
}

/** How an informer lists and watches. */
export interface InformerOptions<T extends KubernetesObject> {
  /** The collection's path, e.g. `/api/v1/pods`. */
  readonly path: string;
  readonly list: () => Promise<KubernetesListObject<T>>;
  readonly watch: WatchSource;
  readonly fieldSelector?: string;
  readonly labelSelector?: string;
  /** Extra watch parameters (`allowWatchBookmarks`, `timeoutSeconds`). */
  readonly watchQuery?: Query;
  readonly clock?: Clock;
  /** A number in [0, 1) for the reconnect delay's jitter; default Math.random. */
  readonly random?: () => number;
}

type ObjectHandler<T> = (obj: T) => void;
type ErrorHandler = (err?: unknown) => void;
type Verb = 'add' | 'update' | 'delete' | 'change' | 'error' | 'connect';

const BASE_RECONNECT_MS = 1000;
const MAX_RECONNECT_MS = 30_000;
/** client-go's reflector: `defaultBackoffJitter = 1.0`. */
const RECONNECT_JITTER = 1;

function keyOf(obj: KubernetesObject): [string, string] {
  return [obj.metadata?.namespace ?? '', obj.metadata?.name ?? ''];
}

/** A list+watch informer with its cache. */
export class ListWatchInformer<T extends KubernetesObject> implements Informer<T>, ObjectCache<T> {
  private readonly objects = new Map<string, Map<string, T>>();
  private readonly handlers = { add: [] as ObjectHandler<T>[], update: [] as ObjectHandler<T>[], delete: [] as ObjectHandler<T>[], error: [] as ErrorHandler[], connect: [] as ErrorHandler[] };
  private resourceVersion = '';
  private stopped = true;
  private reconnectDelayMs = 0;
  private request: AbortController | undefined;
  private readonly clock: Clock;
  private readonly random: () => number;
  /** Bumped by stop(): work of an older generation (a list or a delay in flight) does nothing. */
  private generation = 0;

  constructor(private readonly options: InformerOptions<T>) {
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
  }

  on(verb: 'add' | 'update' | 'delete' | 'change', cb: ObjectHandler<T>): void;
  on(verb: 'error' | 'connect', cb: ErrorHandler): void;
  on(verb: Verb, cb: ObjectHandler<T> | ErrorHandler): void {
    for (const v of verb === 'change' ? (['add', 'update', 'delete'] as const) : [verb]) (this.handlers[v] as unknown[]).push(cb);
  }

  off(verb: 'add' | 'update' | 'delete' | 'change', cb: ObjectHandler<T>): void;
  off(verb: 'error' | 'connect', cb: ErrorHandler): void;
  off(verb: Verb, cb: ObjectHandler<T> | ErrorHandler): void {
    for (const v of verb === 'change' ? (['add', 'update', 'delete'] as const) : [verb]) {
      const list = this.handlers[v] as unknown[];
      const at = list.indexOf(cb);
      if (at !== -1) list.splice(at, 1);
    }
  }

  get(name: string, namespace?: string): T | undefined {
    return this.objects.get(namespace ?? '')?.get(name);
  }

  list(namespace?: string): readonly T[] {
    if (namespace !== undefined && namespace !== '') return [...(this.objects.get(namespace)?.values() ?? [])];
    return [...this.objects.values()].flatMap((byName) => [...byName.values()]);
  }

  /** The resourceVersion of the last list or event; '' before the first list and after 410 Gone. */
  latestResourceVersion(): string {
    return this.resourceVersion;
  }

  async start(): Promise<void> {
    this.stopped = false;
    this.reconnectDelayMs = 0;
    await this.connect(this.generation, false);
  }

  stop(): Promise<void> {
    this.stopped = true;
    this.generation += 1;
    this.request?.abort();
    this.request = undefined;
    return Promise.resolve();
  }

  private async connect(generation: number, reconnect: boolean): Promise<void> {
    if (this.stopped || generation !== this.generation) return;
    for (const cb of [...this.handlers.connect]) cb(undefined);
    if (reconnect && !(await this.pause(generation))) return;
    if (this.resourceVersion === '' && !(await this.relist(generation))) return;
    if (reconnect) this.reconnectDelayMs = Math.min(this.reconnectDelayMs > 0 ? this.reconnectDelayMs * 2 : BASE_RECONNECT_MS, MAX_RECONNECT_MS);
    const request = await this.options.watch.watch(this.options.path, this.watchQuery(), {
      onEvent: (type, object) => {
        if (generation === this.generation) this.onEvent(type, object as T);
      },
      onDone: (err) => {
        if (generation === this.generation) this.onWatchEnd(generation, err);
      },
    });
    // stop() during the connect bumped the generation: this watch has no owner left.
    if (generation !== this.generation) request.abort();
    else this.request = request;
  }

  /**
   * The wait before reopening: the delay after a quiet watch, and before the relist that follows a
   * 410 Gone at least the base delay, jittered. client-go's reflector waits its jittered backoff
   * after every ListAndWatch, one ended by an expired version included; an API server restart
   * expires the watches of every node at once (its new watch cache starts at a later version), and
   * relisting at once would send the whole fleet's lists in the same second. False when the
   * informer was stopped meanwhile.
   */
  private async pause(generation: number): Promise<boolean> {
    const baseMs = this.resourceVersion === '' ? Math.max(this.reconnectDelayMs, BASE_RECONNECT_MS) : this.reconnectDelayMs;
    if (baseMs <= 0) return true;
    const delayMs = jittered(baseMs, RECONNECT_JITTER, this.random);
    await new Promise<void>((resolve) => this.clock.setTimeout(resolve, delayMs));
    return generation === this.generation;
  }

  /** Lists into the cache; false when the list failed (reported) or the informer was stopped meanwhile. */
  private async relist(generation: number): Promise<boolean> {
    let list: KubernetesListObject<T>;
    try {
      list = await this.options.list();
    } catch (err: unknown) {
      this.fail(generation, err);
      return false;
    }
    if (generation !== this.generation) return false;
    this.replaceAll(list.items);
    this.resourceVersion = list.metadata?.resourceVersion ?? '';
    return true;
  }

  private watchQuery(): Query {
    const { watchQuery, labelSelector, fieldSelector } = this.options;
    return {
      ...watchQuery,
      resourceVersion: this.resourceVersion,
      ...(labelSelector === undefined ? {} : { labelSelector }),
      ...(fieldSelector === undefined ? {} : { fieldSelector }),
    };
  }

  private onWatchEnd(generation: number, err: unknown): void {
    this.request = undefined;
    if (err !== undefined && err !== null) {
      if (isGone(err)) this.resourceVersion = '';
      else if (err instanceof WatchTimeoutError) this.reconnectDelayMs = 0;
      else {
        this.fail(generation, err);
        return;
      }
    }
    void this.connect(generation, true);
  }

  private fail(generation: number, err: unknown): void {
    if (generation !== this.generation) return;
    for (const cb of [...this.handlers.error]) cb(err);
  }

  private onEvent(type: string, obj: T): void {
    switch (type) {
      case 'ERROR':
        // A Status object: 410 means the version expired; the server ends the watch next.
        if (watchErrorStatusCode(obj) === 410) this.resourceVersion = '';
        return;
      case 'ADDED':
      case 'MODIFIED':
        this.upsert(obj);
        break;
      case 'DELETED':
        this.remove(obj);
        break;
      default:
        break;
    }
    this.reconnectDelayMs = 0;
    this.resourceVersion = obj.metadata?.resourceVersion ?? '';
  }

  private upsert(obj: T): void {
    const [namespace, name] = keyOf(obj);
    let byName = this.objects.get(namespace);
    if (byName === undefined) {
      byName = new Map();
      this.objects.set(namespace, byName);
    }
    const before = byName.get(name);
    const version = before?.metadata?.resourceVersion;
    if (version !== undefined && version === obj.metadata?.resourceVersion) return;
    byName.set(name, obj);
    for (const cb of before === undefined ? [...this.handlers.add] : [...this.handlers.update]) cb(obj);
  }

  private remove(obj: T): void {
    const [namespace, name] = keyOf(obj);
    const byName = this.objects.get(namespace);
    if (byName?.delete(name) !== true) return;
    if (byName.size === 0) this.objects.delete(namespace);
    for (const cb of [...this.handlers.delete]) cb(obj);
  }

  /** A fresh list: objects it lacks are deleted, the rest added or updated. */
  private replaceAll(items: readonly T[]): void {
    const present = new Set(items.map((o) => keyOf(o).join('/')));
    for (const obj of this.list()) if (!present.has(keyOf(obj).join('/'))) this.remove(obj);
    for (const obj of items) this.upsert(obj);
  }
}
