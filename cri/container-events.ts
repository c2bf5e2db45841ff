/**
 * The runtime's container event stream (CRI `GetContainerEvents`, server streaming): created,
 * started, stopped and deleted containers as they happen, each with its sandbox's status. A stream
 * is the one CRI call on `@grpc/grpc-js` (the unary calls have their own framing, `grpc-unary.ts`):
 * one long-lived call per agent, so its per-message cost does not matter.
 *
 * ```ts
 * const events = openContainerEvents('unix:///run/containerd/containerd.sock');
 * await events.watch((e) => console.log(e.type, e.podUid), signal); // ends with a CriError
 * ```
 */
import { Client, credentials, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { criErrorFromStatus, CriCancelledError, type CriError } from './errors.js';
import { unixSocketPath } from './grpc-unary.js';
import { criMethod } from './proto.js';
import { bigintFromWire } from './convert-response.js';

/** What happened to a container. */
export type ContainerEventType = 'CONTAINER_CREATED_EVENT' | 'CONTAINER_STARTED_EVENT' | 'CONTAINER_STOPPED_EVENT' | 'CONTAINER_DELETED_EVENT';

/** One event, with what nodelet needs to find the pod. */
export interface ContainerEvent {
  readonly containerId: string;
  readonly type: ContainerEventType;
  /** Nanoseconds since the epoch. */
  readonly createdAt: bigint;
  /** The pod's UID from the event's sandbox status; '' when the runtime sent none. */
  readonly podUid: string;
  /** The sandbox's labels (`nodelet.dev/node` tells whose it is); empty when none were sent. */
  readonly sandboxLabels: Readonly<Record<string, string>>;
}

interface WireContainerEvent {
  containerId: string;
  containerEventType: string;
  createdAt: string;
  podSandboxStatus: { metadata: { uid: string } | null; labels: Record<string, string> } | null;
}

/** The stream of one runtime. */
export interface ContainerEventStream {
  /**
   * Calls `onEvent` for every event until the stream ends, `signal` aborts it, or it fails.
   * Always rejects: with `CriCancelledError` when aborted, else the typed error of the stream's end
   * (`CriUnimplementedError` from a runtime without events, `CriUnavailableError` when it went away).
   */
  watch(onEvent: (event: ContainerEvent) => void, signal: AbortSignal): Promise<never>;
  /** Closes the channel. */
  close(): void;
}

const METHOD = 'GetContainerEvents';

function eventFromWire(wire: WireContainerEvent): ContainerEvent {
  return {
    containerId: wire.containerId,
    type: wire.containerEventType as ContainerEventType,
    createdAt: bigintFromWire(wire.createdAt),
    podUid: wire.podSandboxStatus?.metadata?.uid ?? '',
    sandboxLabels: { ...(wire.podSandboxStatus?.labels ?? {}) },
  };
}

/** A stream that ended without an error status is a failure too: the runtime closed it. */
function endError(error: ServiceError | undefined): CriError {
  if (error === undefined) return criErrorFromStatus({ method: METHOD, code: GrpcStatus.UNAVAILABLE, message: 'the runtime ended the event stream' });
  return criErrorFromStatus({ method: METHOD, code: error.code, message: error.details, cause: error });
}

/** The event stream of the runtime at `endpoint` (`unix:///path` or a bare path); dials on the first watch. */
export function openContainerEvents(endpoint: string): ContainerEventStream {
  const client = new Client(`unix://${unixSocketPath(endpoint)}`, credentials.createInsecure(), { 'grpc.max_receive_message_length': 16 * 1024 * 1024 });
  const method = criMethod('RuntimeService', METHOD);
  return {
    watch: (onEvent, signal) =>
      new Promise<never>((_resolve, reject) => {
        if (signal.aborted) {
          reject(new CriCancelledError({ method: METHOD, code: GrpcStatus.CANCELLED, message: 'cancelled before it started' }));
          return;
        }
        const call = client.makeServerStreamRequest(method.path, method.requestSerialize, method.responseDeserialize, {});
        const cancel = (): void => { call.cancel(); };
        signal.addEventListener('abort', cancel, { once: true });
        let failed: ServiceError | undefined;
        call.on('data', (wire: WireContainerEvent) => { onEvent(eventFromWire(wire)); });
        call.on('error', (error: ServiceError) => { failed = error; });
        call.on('close', () => {
          signal.removeEventListener('abort', cancel);
          reject(endError(failed));
        });
      }),
    close: () => { client.close(); },
  };
}
