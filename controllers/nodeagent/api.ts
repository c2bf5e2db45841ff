/**
 * The wire side of the NodeAgent controller: get, create, replace status and watch one NodeAgent,
 * through the agent's API client (`kube/`). A seam: unit tests use `nodeagent-fake-api.ts`. Errors
 * are `KubeApiError`s (the HTTP status in `.code`), read with the predicates of `api-errors.ts`.
 */
import type { KubeClient } from '../../kube/client.js';
import { CustomObjectsClient } from '../../kube/groups.js';
import { isNotFound } from '../../util/api-errors.js';
import { asNodeAgent, NODEAGENT_GROUP, NODEAGENT_PLURAL, NODEAGENT_VERSION, type NodeAgent } from './types.js';

/** Watch event types the API server sends. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** Where one watch's output goes. */
export interface WatchHandlers {
  /** One event; `object` is the NodeAgent (a `Status` for ERROR, metadata only for BOOKMARK). */
  onEvent(type: WatchEventType, object: unknown): void;
  /** The watch ended: `undefined` for a clean close by the server, else the error. Called once. */
  onEnd(err: unknown): void;
}

/** An open watch. */
export interface WatchHandle {
  /** Closes the watch; `onEnd` is not called for a stop. */
  stop(): void;
}

/** What the NodeAgent controller asks of the API server. */
export interface NodeAgentApi {
  /** The named NodeAgent; undefined when it does not exist (rejects when the resource itself is unknown). */
  get(name: string): Promise<NodeAgent | undefined>;
  /** Creates the object; rejects with 409 AlreadyExists when it exists. */
  create(agent: NodeAgent): Promise<NodeAgent>;
  /**
   * Replaces the status subresource. `agent.metadata.resourceVersion` is the optimistic-concurrency
   * precondition: a stale one rejects with 409 Conflict. Resolves with the stored object.
   */
  replaceStatus(agent: NodeAgent): Promise<NodeAgent>;
  /** Watches the named object from `resourceVersion`; the server ends it after `timeoutSeconds`. */
  watch(request: { readonly name: string; readonly resourceVersion: string; readonly timeoutSeconds: number }, handlers: WatchHandlers): Promise<WatchHandle>;
}

/** An answer that is not a NodeAgent: the API server or a proxy misbehaved. */
export class MalformedNodeAgentError extends Error {
  override readonly name = 'MalformedNodeAgentError';
  constructor(readonly operation: string) {
    super(`${operation}: the API server's answer is not a NodeAgent`);
  }
}

/** True when `err` is a {@link MalformedNodeAgentError}. */
export function isMalformedNodeAgentError(err: unknown): err is MalformedNodeAgentError {
  return err instanceof MalformedNodeAgentError;
}

function expectNodeAgent(operation: string, value: unknown): NodeAgent {
  const agent = asNodeAgent(value);
  if (agent === undefined) throw new MalformedNodeAgentError(operation);
  return agent;
}

const WATCH_EVENT_TYPES = new Set<string>(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']);

function isWatchEventType(type: string): type is WatchEventType {
  return WATCH_EVENT_TYPES.has(type);
}

/** The real API, through `kube`. */
export function createNodeAgentApi(kube: KubeClient): NodeAgentApi {
  const api = new CustomObjectsClient(kube);
  const resource = { group: NODEAGENT_GROUP, version: NODEAGENT_VERSION, plural: NODEAGENT_PLURAL };
  return {
    async get(name) {
      try {
        return expectNodeAgent('get', await api.getClusterCustomObject({ ...resource, name }));
      } catch (err: unknown) {
        // A 404 for a resource type the API server does not know has reason NotFound too, but
        // then create fails the same way, so the caller keeps retrying rather than assuming.
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    async create(agent) {
      return expectNodeAgent('create', await api.createClusterCustomObject({ ...resource, body: agent }));
    },
    async replaceStatus(agent) {
      return expectNodeAgent('replaceStatus', await api.replaceClusterCustomObjectStatus({ ...resource, name: agent.metadata.name, body: agent }));
    },
    async watch(request, handlers) {
      const state = { stopped: false };
      const controller = await kube.transport.watch(
        CustomObjectsClient.path(resource),
        {
          fieldSelector: `metadata.name=${request.name}`,
          resourceVersion: request.resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds: request.timeoutSeconds,
        },
        {
          onEvent: (type, object) => {
            if (!state.stopped && isWatchEventType(type)) handlers.onEvent(type, object);
          },
          onDone: (err) => {
            if (!state.stopped) handlers.onEnd(err ?? undefined);
          },
        },
      );
      return {
        stop() {
          state.stopped = true;
          controller.abort();
        },
      };
    },
  };
}
