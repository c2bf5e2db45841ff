/**
 * An in-memory NodeAgent API for unit tests, with the API server's semantics that matter here:
 * resource versions bump on every write, `generation` only on spec changes, status writes need the
 * current resource version (else 409 Conflict), create answers 409 AlreadyExists, and open watches
 * see every change. Calls are recorded; any method can be made to fail. Production code never
 * imports this file.
 */
import { apiError } from './fake-kube-api.js';
import type { NodeAgentApi, WatchHandle, WatchHandlers } from '../../controllers/nodeagent/api.js';
import type { NodeAgent } from '../../controllers/nodeagent/types.js';

type Method = 'get' | 'create' | 'replaceStatus' | 'watch';

/** A watch the fake holds open. */
interface OpenWatch {
  readonly name: string;
  readonly handlers: WatchHandlers;
  open: boolean;
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

/** The fake, with helpers a test uses to act as a user or as the API server. */
export class FakeNodeAgentApi implements NodeAgentApi {
  readonly objects = new Map<string, NodeAgent>();
  /** Method names in call order. */
  readonly calls: string[] = [];
  /** The resource version each watch started from, in order. */
  readonly watchedFrom: string[] = [];
  private readonly failures = new Map<string, Error[]>();
  private readonly watches: OpenWatch[] = [];
  private resourceVersion = 100;

  get(name: string): Promise<NodeAgent | undefined> {
    return this.call('get', () => {
      const agent = this.objects.get(name);
      return agent === undefined ? undefined : clone(agent);
    });
  }

  create(agent: NodeAgent): Promise<NodeAgent> {
    return this.call('create', () => {
      if (this.objects.has(agent.metadata.name)) throw apiError(409, 'AlreadyExists');
      const metadata = { name: agent.metadata.name, generation: 1, uid: `uid-${agent.metadata.name}`, creationTimestamp: '2030-01-01T00:00:00Z' };
      // The status subresource: create ignores any status in the body.
      return this.store({ apiVersion: agent.apiVersion, kind: agent.kind, metadata, spec: agent.spec ?? {} }, 'ADDED');
    });
  }

  replaceStatus(agent: NodeAgent): Promise<NodeAgent> {
    return this.call('replaceStatus', () => {
      const current = this.existing(agent.metadata.name);
      if (agent.metadata.resourceVersion !== current.metadata.resourceVersion) throw apiError(409, 'Conflict');
      return this.store({ ...current, status: agent.status === undefined ? undefined : clone(agent.status) }, 'MODIFIED');
    });
  }

  watch(request: { readonly name: string; readonly resourceVersion: string }, handlers: WatchHandlers): Promise<WatchHandle> {
    return this.call('watch', () => {
      this.watchedFrom.push(request.resourceVersion);
      const watch: OpenWatch = { name: request.name, handlers, open: true };
      this.watches.push(watch);
      return {
        stop() {
          watch.open = false;
        },
      };
    });
  }

  /** The next calls of `method` throw these errors, one per call. */
  failNext(method: Method, ...errors: Error[]): void {
    this.failures.set(method, [...(this.failures.get(method) ?? []), ...errors]);
  }

  /** A user edits the spec: generation and resource version bump, watches see MODIFIED. */
  setSpec(name: string, spec: unknown): void {
    const current = this.existing(name);
    this.store({ ...current, spec, metadata: { ...current.metadata, generation: (current.metadata.generation ?? 0) + 1 } }, 'MODIFIED');
  }

  /** A user deletes the object; watches see DELETED. */
  remove(name: string): void {
    const current = this.existing(name);
    this.objects.delete(name);
    this.notify('DELETED', current);
  }

  /** Sends a bookmark at a new resource version to the open watches (as the server does when idle). */
  bookmark(): string {
    const resourceVersion = String(++this.resourceVersion);
    for (const watch of this.watches) {
      if (watch.open) watch.handlers.onEvent('BOOKMARK', { apiVersion: 'nodelet.dev/v1alpha1', kind: 'NodeAgent', metadata: { resourceVersion } });
    }
    return resourceVersion;
  }

  /** The server ends every open watch (cleanly, or with `err`). */
  endWatches(err?: unknown): void {
    for (const watch of this.watches.splice(0)) {
      if (!watch.open) continue;
      watch.open = false;
      watch.handlers.onEnd(err);
    }
  }

  /** Watches currently open. */
  openWatches(): number {
    return this.watches.filter((w) => w.open).length;
  }

  private async call<T>(method: Method, body: () => T): Promise<T> {
    await Promise.resolve();
    this.calls.push(method);
    const error = this.failures.get(method)?.shift();
    if (error) throw error;
    return body();
  }

  private store(agent: NodeAgent, event: 'ADDED' | 'MODIFIED'): NodeAgent {
    const stored = { ...agent, metadata: { ...agent.metadata, resourceVersion: String(++this.resourceVersion) } };
    this.objects.set(stored.metadata.name, stored);
    this.notify(event, stored);
    return clone(stored);
  }

  private notify(type: 'ADDED' | 'MODIFIED' | 'DELETED', agent: NodeAgent): void {
    for (const watch of this.watches) {
      if (watch.open && watch.name === agent.metadata.name) watch.handlers.onEvent(type, clone(agent));
    }
  }

  private existing(name: string): NodeAgent {
    const agent = this.objects.get(name);
    if (agent === undefined) throw apiError(404, 'NotFound');
    return agent;
  }
}

/** Creates an empty fake. */
export function createFakeNodeAgentApi(): FakeNodeAgentApi {
  return new FakeNodeAgentApi();
}
