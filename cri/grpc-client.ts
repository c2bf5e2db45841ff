/**
 * The CRI client nodelet uses: `RuntimeService` and `ImageService` (`types.ts`) over one HTTP/2
 * connection to the runtime's unix socket (gRPC unary calls on `node:http2`, `grpc-unary.ts`), with
 * `api.proto` loaded at runtime.
 *
 * ```ts
 * const cri = createCriClient({ endpoint: 'unix:///run/containerd/containerd.sock', defaultTimeoutMs: 10_000 });
 * const { runtimeName } = await cri.runtime.version();
 * cri.close();
 * ```
 */
import { GrpcImageService } from './image-client.js';
import type { CriLogger } from './error-log.js';
import type { CriMetrics } from './operation-metrics.js';
import { GrpcRuntimeService } from './runtime-client.js';
import { CriTransport } from './transport.js';
import type { ContainerCheckpointer, ContainerLogRuntime, ImageService, RuntimeConfigReader, RuntimeService, StatsRuntime, StreamingRuntime } from './types.js';

export type { CriLogger } from './error-log.js';
export type { CriMetrics, CriOperation } from './operation-metrics.js';
export { DEFAULT_PULL_TIMEOUT_MS } from './image-client.js';

/** How to reach the runtime and how long to wait for it. */
export interface CriClientOptions {
  /** `unix:///path/to/containerd.sock` (a bare absolute path is accepted too). */
  readonly endpoint: string;
  /** Deadline of every call whose `CallOptions` give none (stop and exec add their own timeout). */
  readonly defaultTimeoutMs: number;
  /** Deadline of `pullImage` unless its `CallOptions` say otherwise; `DEFAULT_PULL_TIMEOUT_MS` (5 min) by default. */
  readonly pullTimeoutMs?: number;
  /** Receives failed calls (warn, de-duplicated) and not-found answers (debug). */
  readonly logger?: CriLogger;
  /** Milliseconds since the epoch, for log de-duplication and call durations; `Date.now` by default. */
  readonly now?: () => number;
  /** Receives every call's operation (the kubelet's name), duration and failure. */
  readonly metrics?: CriMetrics;
}

/** Both CRI services over one connection. */
export interface CriClient {
  readonly runtime: RuntimeService & RuntimeConfigReader & ContainerCheckpointer & StreamingRuntime & StatsRuntime & ContainerLogRuntime;
  readonly image: ImageService;
  /** Closes the connection once the calls in flight are done; calls made afterwards fail. */
  close(): void;
}

/**
 * Connects lazily: nothing is dialled until the first call, so creating a client never fails
 * because the runtime is down (only an unsupported endpoint scheme throws). A call made while the
 * runtime is down fails at once with `CriUnavailableError`; a lost connection is dialled again by
 * the next call (after a failed dial, not before 250 ms).
 */
export function createCriClient(options: CriClientOptions): CriClient {
  if (!(options.defaultTimeoutMs > 0)) throw new RangeError('defaultTimeoutMs must be positive');
  const transport = new CriTransport({ endpoint: options.endpoint, logger: options.logger, now: options.now, metrics: options.metrics });
  const services = { transport, defaultTimeoutMs: options.defaultTimeoutMs };
  return {
    runtime: new GrpcRuntimeService(services),
    image: new GrpcImageService({ ...services, pullTimeoutMs: options.pullTimeoutMs }),
    close: () => {
      transport.close();
    },
  };
}
