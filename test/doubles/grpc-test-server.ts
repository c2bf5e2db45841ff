/**
 * An in-process CRI gRPC server on a unix socket in a temporary directory, for tests of the real
 * client (serialization, deadlines, status codes) without a container runtime. Each test sets the
 * handlers it needs; an unset method answers UNIMPLEMENTED. Requests are recorded decoded, in the
 * same wire shape the client uses (`wire.ts`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server, ServerCredentials, status as GrpcStatus } from '@grpc/grpc-js';
import type { ServerUnaryCall, UntypedHandleCall, UntypedServiceImplementation, sendUnaryData } from '@grpc/grpc-js';
import { criService } from '../../cri/proto.js';
import type { CriServiceName } from '../../cri/proto.js';

/** Answers one request: a response object (wire shape), or throws a `TestServerStatus`. */
export type TestHandler = (request: Record<string, unknown>) => object | Promise<object>;

/** Thrown by a handler to answer with a gRPC status instead of a response. */
export class TestServerStatus extends Error {
  constructor(
    readonly code: GrpcStatus,
    readonly details: string,
  ) {
    super(details);
    this.name = 'TestServerStatus';
  }
}

export interface RecordedRequest {
  readonly method: string;
  readonly request: Record<string, unknown>;
}

export interface TestCriServer {
  /** `unix:///…/cri.sock` */
  readonly endpoint: string;
  /** Handlers by method name (`Version`, `PullImage`, …); tests assign them freely. */
  readonly handlers: Map<string, TestHandler>;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

function answer(handler: TestHandler | undefined, request: Record<string, unknown>, callback: sendUnaryData<object>): void {
  if (handler === undefined) {
    callback({ code: GrpcStatus.UNIMPLEMENTED, details: 'not implemented by the test server' });
    return;
  }
  Promise.resolve()
    .then(() => handler(request))
    .then(
      (response) => {
        callback(null, response);
      },
      (e: unknown) => {
        if (e instanceof TestServerStatus) callback({ code: e.code, details: e.details });
        else callback({ code: GrpcStatus.INTERNAL, details: String(e) });
      },
    );
}

function implementation(
  service: CriServiceName,
  server: Pick<TestCriServer, 'handlers' | 'requests'>,
): UntypedServiceImplementation {
  const methods: Record<string, UntypedHandleCall> = {};
  // Service definitions are keyed by the proto method name (`Version`), which the server looks up first.
  for (const method of Object.keys(criService(service))) {
    methods[method] = (call: ServerUnaryCall<Record<string, unknown>, object>, callback: sendUnaryData<object>) => {
      server.requests.push({ method, request: call.request });
      answer(server.handlers.get(method), call.request, callback);
    };
  }
  return methods;
}

/** Starts a server on a fresh socket; `close()` stops it and removes the directory. */
export async function startTestCriServer(): Promise<TestCriServer> {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-cri-'));
  const endpoint = `unix://${join(dir, 'cri.sock')}`;
  const server = new Server();
  const state = { handlers: new Map<string, TestHandler>(), requests: [] as RecordedRequest[] };
  server.addService(criService('RuntimeService'), implementation('RuntimeService', state));
  server.addService(criService('ImageService'), implementation('ImageService', state));
  await new Promise<void>((resolve, reject) => {
    server.bindAsync(endpoint, ServerCredentials.createInsecure(), (error) => {
      if (error) reject(error);
      else resolve();
    });
  });
  return {
    endpoint,
    ...state,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.tryShutdown(() => {
          resolve();
        });
      });
      server.forceShutdown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
