/**
 * What the runtime says it can do, from its last CRI Status (the kubelet's runtimeState:
 * `runtime_handlers` and `features`), read where a pod needs a feature (user namespaces per
 * handler) and by the Node's status. Discovered, never assumed from a version: containerd 1.6
 * lists no handler, so there no handler has any feature.
 *
 * The node's readiness loop refreshes it; a reader before the first refresh asks the runtime once.
 */
import type { CallOptions, RuntimeHandlerInfo, RuntimeService, RuntimeStatus, RuntimeWideFeatures } from '../../cri/types.js';
import type { HandlerUsernsSupport } from '../userns/userns-manager.js';

/** The runtime's handlers and features as last reported. */
export interface RuntimeFeatureSnapshot {
  readonly handlers: readonly RuntimeHandlerInfo[];
  readonly features: RuntimeWideFeatures;
}

/** Reads the runtime's features (narrow: what the executor and the node status need). */
export interface RuntimeFeatureReader {
  /** The last snapshot; asks the runtime when there is none yet. */
  current(options?: CallOptions): Promise<RuntimeFeatureSnapshot>;
  /** The last snapshot, without asking the runtime; undefined before the first Status. */
  last(): RuntimeFeatureSnapshot | undefined;
}

/** Whether the runtime's last snapshot says `handler` makes read-only mounts recursive; undefined when it has not said. */
export function lastRecursiveReadOnlySupport(reader: RuntimeFeatureReader, handler: string): boolean | undefined {
  const snapshot = reader.last();
  return snapshot === undefined ? undefined : handlerInfo(snapshot, handler)?.recursiveReadOnlyMounts;
}

/** The runtime's entry for a handler ("" the default), if it lists one. */
export function handlerInfo(snapshot: RuntimeFeatureSnapshot, handler: string): RuntimeHandlerInfo | undefined {
  return snapshot.handlers.find((h) => h.name === handler);
}

/** Whether the handler runs user namespaces, as the kubelet's `HandlerSupportsUserNamespaces`. */
export function handlerUsernsSupport(snapshot: RuntimeFeatureSnapshot, handler: string): HandlerUsernsSupport {
  // A runtime without the field (no handler listed) supports user namespaces nowhere.
  if (snapshot.handlers.length === 0) return 'unsupported';
  const found = handlerInfo(snapshot, handler);
  if (found === undefined) return 'unknown';
  return found.userNamespaces ? 'supported' : 'unsupported';
}

export class RuntimeFeatures implements RuntimeFeatureReader {
  private lastSnapshot: RuntimeFeatureSnapshot | undefined;

  constructor(private readonly runtime: Pick<RuntimeService, 'status'>) {}

  /** Asks the runtime for its status, keeps its handlers and features, and returns the status. */
  async refresh(options?: CallOptions): Promise<RuntimeStatus> {
    const status = await this.runtime.status(options);
    this.keep(status);
    return status;
  }

  /** The last snapshot, without asking the runtime; undefined before the first Status. */
  last(): RuntimeFeatureSnapshot | undefined {
    return this.lastSnapshot;
  }

  async current(options?: CallOptions): Promise<RuntimeFeatureSnapshot> {
    if (this.lastSnapshot !== undefined) return this.lastSnapshot;
    return this.keep(await this.runtime.status(options));
  }

  private keep(status: RuntimeStatus): RuntimeFeatureSnapshot {
    this.lastSnapshot = { handlers: status.handlers, features: status.features };
    return this.lastSnapshot;
  }
}
