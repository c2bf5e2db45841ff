/**
 * Calls to a plugin over `@grpc/grpc-js` on a unix socket: one client per socket, a deadline on
 * every call, the caller's AbortSignal cancelling it, and typed errors.
 */
import { Client, credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import type { MethodDefinition } from '@grpc/proto-loader';

/** A plugin call that failed: the gRPC status code and the plugin's message. */
export class PluginCallError extends Error {
  constructor(
    readonly method: string,
    readonly code: number,
    details: string,
  ) {
    super(details);
    this.name = 'PluginCallError';
  }
}

export function isPluginCallError(error: unknown): error is PluginCallError {
  return error instanceof PluginCallError;
}

/** A client of the plugin listening on `socketPath` (absolute). */
export function unixClient(socketPath: string): Client {
  return new Client(`unix://${socketPath}`, credentials.createInsecure());
}

/** Waits until the socket accepts a connection, at most `timeoutMs` (the kubelet dials with a 10 s block). */
export async function waitForReady(client: Client, timeoutMs: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    client.waitForReady(Date.now() + timeoutMs, (error) => {
      if (error === undefined) resolve();
      else reject(new PluginCallError('connect', 14, `failed to dial plugin: ${error.message}`));
    });
  });
}

function toError(method: string, error: ServiceError): PluginCallError {
  return new PluginCallError(method, error.code, error.details === '' ? error.message : error.details);
}

function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error('the call was cancelled');
}

/** One unary call with a deadline; `signal` cancels it. */
export async function unaryCall(client: Client, method: MethodDefinition<object, object>, request: object, options: { timeoutMs: number; signal?: AbortSignal | undefined }): Promise<unknown> {
  options.signal?.throwIfAborted();
  return new Promise<unknown>((resolve, reject) => {
    const call = client.makeUnaryRequest(method.path, method.requestSerialize, method.responseDeserialize, request, new Metadata(), { deadline: Date.now() + options.timeoutMs }, (error, value) => {
      options.signal?.removeEventListener('abort', cancel);
      if (error !== null) reject(options.signal?.aborted === true ? abortReason(options.signal) : toError(method.path, error));
      else resolve(value);
    });
    const cancel = (): void => {
      call.cancel();
    };
    options.signal?.addEventListener('abort', cancel, { once: true });
  });
}

/**
 * A server stream: `onMessage` for each message; resolves when the stream ends (the plugin closed
 * it, went away, or `signal` aborted). Never rejects: the end is the caller's cue either way.
 */
export async function serverStream(client: Client, method: MethodDefinition<object, object>, request: object, handlers: { onMessage(message: unknown): void; signal?: AbortSignal }): Promise<{ error?: Error }> {
  return new Promise((resolve) => {
    const stream = client.makeServerStreamRequest(method.path, method.requestSerialize, method.responseDeserialize, request, new Metadata(), {});
    const cancel = (): void => {
      stream.cancel();
    };
    handlers.signal?.addEventListener('abort', cancel, { once: true });
    let ended = false;
    const end = (error?: Error): void => {
      if (ended) return;
      ended = true;
      handlers.signal?.removeEventListener('abort', cancel);
      resolve(error === undefined ? {} : { error });
    };
    stream.on('data', (message: unknown) => {
      handlers.onMessage(message);
    });
    stream.on('error', (error: Error) => {
      end(error);
    });
    stream.on('end', () => {
      end();
    });
    stream.on('close', () => {
      end();
    });
  });
}
