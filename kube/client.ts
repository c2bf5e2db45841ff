/**
 * The agent's API client: a {@link KubeTransport} and the verbs of a REST resource on it. The typed
 * clients of each API group (core-v1.ts, groups.ts) are built on these; answers are the server's
 * JSON as is, so timestamps are RFC 3339 strings (the types from client-node say `Date`; read them
 * with `new Date(…)`, which takes both).
 */
import type { Clock } from '../util/clock.js';
import type { Logger } from 'pino';
import { InvalidKubeconfigError, UnsupportedKubeconfigError, inClusterEndpoint, loadKubeconfigFile } from './kubeconfig.js';
import type { RequestRateLimiter } from './rate-limit.js';
import { KubeTransport, type KubeRequest, type KubeTransportLimits, type Query } from './transport.js';

/** The media types of a patch. */
export const PatchType = {
  /** Lists merge by their patch keys (conditions by type, containers by name). */
  strategicMerge: 'application/strategic-merge-patch+json',
  /** RFC 7386: objects merge, lists are replaced. */
  merge: 'application/merge-patch+json',
} as const;
export type PatchType = (typeof PatchType)[keyof typeof PatchType];

/** A path segment, escaped. */
export function segment(value: string): string {
  return encodeURIComponent(value);
}

/** The verbs on API paths; the typed group clients call these. */
export class KubeClient {
  /**
   * @param rateLimiter what this client's requests count against instead of the transport's
   *   limiter; `none`: not limited. Absent: the transport's.
   */
  constructor(
    readonly transport: KubeTransport,
    private readonly rateLimiter?: RequestRateLimiter | 'none',
  ) {}

  /**
   * This client's connection with another rate limit, as the kubelet builds its heartbeat client
   * (no limit) and its event client (its own bucket) from the same configuration: the connection
   * pool is shared, so closing either closes both.
   */
  withRateLimiter(rateLimiter: RequestRateLimiter | 'none'): KubeClient {
    return new KubeClient(this.transport, rateLimiter);
  }

  get<T>(path: string, query?: Query, signal?: AbortSignal): Promise<T> {
    return this.send<T>({ method: 'GET', path, ...(query === undefined ? {} : { query }), ...(signal === undefined ? {} : { signal }) });
  }

  create<T>(path: string, body: unknown, query?: Query): Promise<T> {
    return this.send<T>({ method: 'POST', path, body, ...(query === undefined ? {} : { query }) });
  }

  replace<T>(path: string, body: unknown): Promise<T> {
    return this.send<T>({ method: 'PUT', path, body });
  }

  patch<T>(path: string, body: unknown, type: PatchType): Promise<T> {
    return this.send<T>({ method: 'PATCH', path, body, contentType: type });
  }

  delete<T>(path: string, body?: unknown, query?: Query): Promise<T> {
    return this.send<T>({ method: 'DELETE', path, ...(body === undefined ? {} : { body }), ...(query === undefined ? {} : { query }) });
  }

  /** Closes the connection pool's idle sockets. */
  close(): void {
    this.transport.close();
  }

  private send<T>(req: KubeRequest): Promise<T> {
    return this.transport.request<T>(this.rateLimiter === undefined ? req : { ...req, rateLimiter: this.rateLimiter });
  }
}

/**
 * A client from a kubeconfig file, or from the pod's service account when there is none; `limits`
 * may add the metrics that hear every request (the agent's `rest_client_*`) and a rate limiter.
 */
export function connectKube(kubeconfig: string | undefined, clock?: Clock, limits: KubeTransportLimits = {}): KubeClient {
  const endpoint = kubeconfig === undefined ? inClusterEndpoint() : loadKubeconfigFile(kubeconfig);
  return new KubeClient(new KubeTransport(endpoint, clock, limits));
}

/**
 * {@link connectKube} for a command that runs on its own (the approver, redis-users): a kubeconfig
 * it cannot use, or no in-cluster configuration, is logged and answered with undefined (the
 * command exits 1); any other error propagates.
 */
export function connectCommandKube(kubeconfig: string | undefined, logger: Logger): KubeClient | undefined {
  try {
    return connectKube(kubeconfig);
  } catch (error) {
    if (!(error instanceof InvalidKubeconfigError || error instanceof UnsupportedKubeconfigError)) throw error;
    logger.error({ err: error }, 'cannot reach the API server');
    return undefined;
  }
}

/** A `Date` that serializes with six fractional digits, as the API's MicroTime fields require. */
export class MicroTime extends Date {
  override toISOString(): string {
    return `${super.toISOString().slice(0, -1)}000Z`;
  }
}
